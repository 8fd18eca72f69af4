// Internal to the task generators (train/data/task_*.cc): a portable seeded RNG, pick/shuffle helpers and
// the shared bilingual lexicons. Not a public header; tasks.h is the interface.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/tasks.h"

namespace pocket::train::taskgen {

// splitmix64: the same stream on every platform and standard library (std:: distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0. The modulo bias is below 2^-40 for the small n used here.
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  int range(int lo, int hi) { return lo + below(hi - lo + 1); }  // inclusive
  bool chance(double p) { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0) < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(below(static_cast<int>(v.size())))]; }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(below(static_cast<int>(i)))]);
  }

 private:
  uint64_t state_;
};

// A word in both languages; generators pick the side that matches the example's language.
struct Bi {
  std::string en, zh;
  const std::string& in(Lang l) const { return l == Lang::kZh ? zh : en; }
};

// Replaces every "{key}" in `tmpl` by its value.
std::string fill(std::string tmpl, const std::vector<std::pair<std::string, std::string>>& slots);
// True when `s` contains `part`.
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Shared lexicons.
const std::vector<Bi>& cities();
const std::vector<Bi>& person_names();
const std::vector<Bi>& colours();
const std::vector<Bi>& weekdays();
std::string order_id(Rng& r);   // e.g. "A58213"
std::string phone(Rng& r);      // e.g. "138-5521-0934"
std::string clock_time(Rng& r, Lang l);  // "7:30 am" / "早上7点半"

// One generator per task, each returning a prompt and its answer for language `l`.
// open_values: the chance that each of brand, colour and name is composed fresh (open_brand etc.) instead of
// drawn from the fixed lexicon; 0 draws nothing extra, so the lexicon-only stream is unchanged.
TaskExample gen_extract(Rng& r, Lang l, double open_values = 0.0);
// Values composed from parts, far more than any lexicon lists: brands ("Korvane", "飞锦"), colours ("dusty
// teal", "雾霾蓝"), product names with a modifier ("waterproof backpack", "防水双肩包").
std::string open_brand(Rng& r, Lang l);
std::string open_colour(Rng& r, Lang l);
std::string open_name(Rng& r, Lang l, const std::string& product);
TaskExample gen_intent(Rng& r, Lang l);
TaskExample gen_rewrite(Rng& r, Lang l);
// open_values: the chance that a city, person, product query or taxi destination is composed fresh.
TaskExample gen_tool(Rng& r, Lang l, double open_values = 0.0);
std::string open_city(Rng& r, Lang l);    // "Velmora", "Stonebridge", "临江"
std::string open_person(Rng& r, Lang l);  // "Tavo", "Marisel", "程雨桐"
std::string open_item(Rng& r, Lang l);    // "foldable phone stand", "便携榨汁机"
std::string open_place(Rng& r, Lang l);   // "Velmora Station", "临江广场"
TaskExample gen_route(Rng& r, Lang l);

}  // namespace pocket::train::taskgen
