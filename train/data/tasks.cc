// Task names, the JSONL form of task examples, shared lexicons and the split builder (see tasks.h).
#include "data/tasks.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "data/task_gen.h"

namespace pocket::train {

std::string_view task_name(TaskKind t) {
  switch (t) {
    case TaskKind::kExtract: return "extract";
    case TaskKind::kIntent: return "intent";
    case TaskKind::kRewrite: return "rewrite";
    case TaskKind::kTool: return "tool";
    case TaskKind::kRoute: return "route";
  }
  return "?";
}

std::string_view lang_name(Lang l) { return l == Lang::kZh ? "zh" : "en"; }

Expected<TaskKind> parse_task_kind(std::string_view name) {
  for (TaskKind t : kAllTasks) {
    if (task_name(t) == name) return t;
  }
  return invalid_argument("[tasks] unknown task '" + std::string(name) +
                          "' (expected extract, intent, rewrite, tool or route)");
}

Expected<Lang> parse_lang(std::string_view name) {
  if (name == "en") return Lang::kEn;
  if (name == "zh") return Lang::kZh;
  return invalid_argument("[tasks] unknown language '" + std::string(name) + "' (expected en or zh)");
}

std::string task_example_to_json(const TaskExample& e) {
  nlohmann::json msgs = nlohmann::json::array();
  msgs.push_back({{"role", "user"}, {"content", e.prompt}});
  msgs.push_back({{"role", "assistant"}, {"content", e.answer}});
  nlohmann::ordered_json j;
  j["messages"] = msgs;
  j["task"] = std::string(task_name(e.task));
  j["lang"] = std::string(lang_name(e.lang));
  return j.dump();
}

Expected<std::vector<TaskExample>> parse_task_examples_jsonl(const std::string& text, const std::string& source) {
  std::vector<TaskExample> out;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto where = [&] { return source + ":" + std::to_string(line_no); };
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return corrupt_file("[tasks] not a JSON object: " + where());
    if (!j.contains("task") || !j["task"].is_string() || !j.contains("lang") || !j["lang"].is_string()) {
      return corrupt_file("[tasks] expected string \"task\" and \"lang\": " + where());
    }
    TaskExample e;
    auto task = parse_task_kind(j["task"].get<std::string>());
    if (!task) return corrupt_file(task.status().message() + ": " + where());
    auto lang = parse_lang(j["lang"].get<std::string>());
    if (!lang) return corrupt_file(lang.status().message() + ": " + where());
    e.task = *task;
    e.lang = *lang;
    auto it = j.find("messages");
    if (it == j.end() || !it->is_array()) return corrupt_file("[tasks] expected a \"messages\" array: " + where());
    bool have_answer = false;
    for (const auto& m : *it) {
      if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
          !m["content"].is_string()) {
        return corrupt_file("[tasks] each message needs string \"role\" and \"content\": " + where());
      }
      const std::string role = m["role"].get<std::string>();
      if (role == "user") {
        e.prompt = m["content"].get<std::string>();
      } else if (role == "assistant") {
        e.answer = m["content"].get<std::string>();
        have_answer = true;
      }
    }
    if (!have_answer || e.prompt.empty()) {
      return corrupt_file("[tasks] expected a user turn and an assistant turn: " + where());
    }
    out.push_back(std::move(e));
  }
  return out;
}

TaskExample generate_task_example(TaskKind task, Lang lang, uint64_t seed, const TaskGenOptions& o) {
  taskgen::Rng r(seed);
  switch (task) {
    case TaskKind::kExtract: return taskgen::gen_extract(r, lang, o.open_values);
    case TaskKind::kIntent: return taskgen::gen_intent(r, lang);
    case TaskKind::kRewrite: return taskgen::gen_rewrite(r, lang);
    case TaskKind::kTool: return taskgen::gen_tool(r, lang, o.open_values);
    case TaskKind::kRoute: return taskgen::gen_route(r, lang);
  }
  return {};
}

TaskSets make_task_sets(uint64_t seed, const TaskSplitSizes& sizes, const TaskGenOptions& o) {
  TaskSets sets;
  std::unordered_set<std::string> seen;  // every prompt drawn so far, over all splits
  constexpr int kCells = static_cast<int>(kAllTasks.size() * kAllLangs.size());
  // One stream per cell; each example's own generator is seeded from the next value of its cell's stream.
  std::vector<taskgen::Rng> streams;
  for (int c = 0; c < kCells; ++c) streams.emplace_back(seed * 1000003ull + static_cast<uint64_t>(c) * 7919ull + 17);
  auto fill_split = [&](int64_t n, std::vector<TaskExample>* out) {
    for (int c = 0; c < kCells; ++c) {
      const int64_t want = n / kCells + (c < n % kCells ? 1 : 0);
      const TaskKind task = kAllTasks[static_cast<size_t>(c / 2)];
      const Lang lang = kAllLangs[static_cast<size_t>(c % 2)];
      int64_t got = 0, misses = 0;
      while (got < want && misses < 2000 + want) {
        TaskExample e = generate_task_example(task, lang, streams[static_cast<size_t>(c)].next(), o);
        if (!seen.insert(e.prompt).second) {
          ++misses;
          continue;
        }
        out->push_back(std::move(e));
        ++got;
      }
    }
    taskgen::Rng order(seed ^ (0xA5A5A5A5ull + out->size()));
    order.shuffle(*out);
  };
  fill_split(sizes.test, &sets.test);
  fill_split(sizes.dev, &sets.dev);
  fill_split(sizes.train, &sets.train);
  return sets;
}

const std::vector<std::string>& intent_labels() {
  static const std::vector<std::string> k = {"order_status", "refund",       "return",        "cancel_order",
                                             "change_address", "product_inquiry", "price_match", "complaint",
                                             "shipping_time", "payment_issue", "account_help", "invoice"};
  return k;
}

namespace taskgen {

std::string fill(std::string tmpl, const std::vector<std::pair<std::string, std::string>>& slots) {
  for (const auto& [key, value] : slots) {
    const std::string k = "{" + key + "}";
    for (size_t p = tmpl.find(k); p != std::string::npos; p = tmpl.find(k, p + value.size())) {
      tmpl.replace(p, k.size(), value);
    }
  }
  return tmpl;
}

const std::vector<Bi>& cities() {
  static const std::vector<Bi> k = {
      {"Shanghai", "上海"}, {"Beijing", "北京"},   {"Shenzhen", "深圳"}, {"Guangzhou", "广州"}, {"Hangzhou", "杭州"},
      {"Chengdu", "成都"},  {"Wuhan", "武汉"},     {"Nanjing", "南京"},  {"Xi'an", "西安"},     {"Suzhou", "苏州"},
      {"London", "伦敦"},   {"Paris", "巴黎"},     {"Berlin", "柏林"},   {"Tokyo", "东京"},     {"Seoul", "首尔"},
      {"Sydney", "悉尼"},   {"Toronto", "多伦多"}, {"Madrid", "马德里"}, {"Rome", "罗马"},      {"Singapore", "新加坡"},
      {"Chicago", "芝加哥"}, {"Boston", "波士顿"}, {"Dubai", "迪拜"},    {"Oslo", "奥斯陆"},    {"Lisbon", "里斯本"}};
  return k;
}

namespace {
// Syllables for invented Latin-script names.
std::string latin_name(Rng& r) {
  static const std::vector<std::string> onset = {"B", "Br", "C", "D", "F", "G", "H", "K", "L", "M", "N", "P", "R",
                                                 "S", "T", "V", "W", "Z", "J", "El", "Or", "Al", "Is", "Th"};
  static const std::vector<std::string> vowel = {"a", "e", "i", "o", "u", "ai", "ea", "io", "y"};
  static const std::vector<std::string> mid = {"n", "r", "l", "v", "m", "s", "d", "th", "k", "nd", "rv", "lm"};
  static const std::vector<std::string> end = {"a", "o", "e", "is", "an", "en", "or", "el", "ia", "ine", "ora", "us"};
  return r.pick(onset) + r.pick(vowel) + r.pick(mid) + r.pick(end);
}
const std::vector<std::string>& place_chars() {
  static const std::vector<std::string> k = {"临", "江", "青", "山", "河", "安", "宁", "东", "西", "南", "北", "新",
                                             "平", "阳", "湖", "海", "石", "龙", "凤", "桥", "松", "柳", "云", "泉",
                                             "明", "华", "兴", "德", "嘉", "长", "丰", "永", "金", "玉", "望", "溪"};
  return k;
}
}  // namespace

std::string open_city(Rng& r, Lang l) {
  if (l == Lang::kZh) return r.pick(place_chars()) + r.pick(place_chars()) + (r.chance(0.3) ? "市" : "");
  if (r.chance(0.3)) {
    return r.pick(std::vector<std::string>{"Stone", "River", "Oak", "North", "Fair", "Green", "Maple", "Clear"}) +
           r.pick(std::vector<std::string>{"bridge", "field", "haven", "ford", "wood", "dale", "port", "view"});
  }
  return latin_name(r) + r.pick(std::vector<std::string>{"", "", "", "ville", "ton", "burg"});
}

std::string open_person(Rng& r, Lang l) {
  if (l == Lang::kZh) {
    static const std::vector<std::string> surname = {"程", "萧", "冯", "董", "袁", "邓", "许", "傅", "沈", "曾", "彭",
                                                     "吕", "苏", "卢", "蒋", "蔡", "贾", "丁", "魏", "薛", "叶", "潘",
                                                     "杜", "戴", "夏", "钟", "汪", "田", "任", "姜", "范", "方"};
    static const std::vector<std::string> given = {"雨", "桐", "子", "涵", "思", "远", "嘉", "怡", "浩", "然", "梓", "轩",
                                                   "若", "曦", "一", "诺", "安", "琪", "泽", "宇", "欣", "妍", "博", "文"};
    return r.pick(surname) + r.pick(given) + (r.chance(0.6) ? r.pick(given) : "");
  }
  return latin_name(r);
}

std::string open_item(Rng& r, Lang l) {
  if (l == Lang::kZh) {
    static const std::vector<std::string> mod = {"便携", "无线", "折叠", "儿童", "智能", "静音", "大号", "迷你", "防水", "加热"};
    static const std::vector<std::string> noun = {"榨汁机", "手机支架", "蓝牙音箱", "电热毯", "加湿器", "键盘", "充电宝",
                                                  "保温杯", "收纳盒", "自拍杆", "颈枕", "鼠标垫"};
    return r.pick(mod) + r.pick(noun);
  }
  static const std::vector<std::string> mod = {"portable", "wireless", "foldable", "kids'", "smart", "quiet", "large",
                                               "mini", "waterproof", "heated"};
  static const std::vector<std::string> noun = {"blender", "phone stand", "bluetooth speaker", "electric blanket",
                                                "humidifier", "keyboard", "power bank", "travel mug", "storage box",
                                                "selfie stick", "neck pillow", "mouse pad"};
  return r.pick(mod) + " " + r.pick(noun);
}

std::string open_place(Rng& r, Lang l) {
  if (l == Lang::kZh) {
    return r.pick(place_chars()) + r.pick(place_chars()) +
           r.pick(std::vector<std::string>{"广场", "站", "医院", "酒店", "路", "大厦", "公园", "SOHO"});
  }
  return open_city(r, l) + r.pick(std::vector<std::string>{" Station", " Mall", " Hospital", " Hotel", " Plaza", " Park"});
}

const std::vector<Bi>& person_names() {
  static const std::vector<Bi> k = {
      {"Anna", "王芳"},   {"Ben", "李强"},   {"Chloe", "张伟"}, {"David", "刘洋"}, {"Emma", "陈静"},
      {"Frank", "杨帆"},  {"Grace", "赵敏"}, {"Henry", "黄磊"}, {"Iris", "周婷"},  {"Jack", "吴杰"},
      {"Kate", "徐丽"},   {"Leo", "孙浩"},   {"Mia", "胡月"},   {"Noah", "朱明"},  {"Olivia", "高欣"},
      {"Paul", "林涛"},   {"Rosa", "郭佳"},  {"Sam", "何琳"},   {"Tom", "马超"},   {"Uma", "罗晨"},
      {"Victor", "梁宇"}, {"Wendy", "宋雪"}, {"Yuki", "谢飞"},  {"Zoe", "韩雨"},   {"Lucas", "唐磊"}};
  return k;
}

const std::vector<Bi>& colours() {
  static const std::vector<Bi> k = {
      {"black", "黑色"},      {"white", "白色"},    {"navy blue", "藏青色"}, {"red", "红色"},
      {"olive green", "橄榄绿"}, {"grey", "灰色"},     {"beige", "米色"},       {"pink", "粉色"},
      {"sky blue", "天蓝色"},  {"burgundy", "酒红色"}, {"yellow", "黄色"},      {"brown", "棕色"},
      {"purple", "紫色"},      {"silver", "银色"},   {"khaki", "卡其色"},     {"orange", "橙色"}};
  return k;
}

const std::vector<Bi>& weekdays() {
  static const std::vector<Bi> k = {{"Monday", "周一"},   {"Tuesday", "周二"}, {"Wednesday", "周三"},
                                    {"Thursday", "周四"}, {"Friday", "周五"},  {"Saturday", "周六"},
                                    {"Sunday", "周日"}};
  return k;
}

std::string order_id(Rng& r) {
  static const std::string kLetters = "ABCDEFGHJKLMNPRSTWXZ";
  std::string s(1, kLetters[static_cast<size_t>(r.below(static_cast<int>(kLetters.size())))]);
  const int digits = r.range(5, 8);
  for (int i = 0; i < digits; ++i) s += static_cast<char>('0' + (i == 0 ? r.range(1, 9) : r.below(10)));
  return s;
}

std::string phone(Rng& r) {
  std::string s = "1";  // (appended piecewise: GCC 12 warns falsely about "1" + std::string)
  s += std::to_string(r.range(30, 89));
  s += "-";
  for (int i = 0; i < 4; ++i) s += static_cast<char>('0' + r.below(10));
  s += "-";
  for (int i = 0; i < 4; ++i) s += static_cast<char>('0' + r.below(10));
  return s;
}

std::string clock_time(Rng& r, Lang l) {
  const int h = r.range(6, 22);
  const int m = r.pick(std::vector<int>{0, 0, 15, 30, 30, 45});
  if (l == Lang::kZh) {
    const char* part = h < 12 ? "上午" : (h < 18 ? "下午" : "晚上");
    const int h12 = h > 12 ? h - 12 : h;
    std::string s = std::string(part) + std::to_string(h12) + "点";
    if (m == 30) s += "半";
    else if (m != 0) s += std::to_string(m) + "分";
    return s;
  }
  const int h12 = h > 12 ? h - 12 : h;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d %s", h12, m, h < 12 ? "am" : "pm");
  return buf;
}

}  // namespace taskgen
}  // namespace pocket::train
