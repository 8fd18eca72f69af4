// `pocket-train build-corpus`: the text scripts/build-corpus.sh extracted (OUT/raw) -> the cleaned,
// deduplicated bilingual corpus (train.txt, heldout*.txt, parallel.jsonl, manifest.json).
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "data/corpus_builder.h"

namespace pocket::train::cli {

int cmd_build_corpus(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("raw") || !a.has("out")) {
    std::printf(
        "usage: pocket-train build-corpus --raw DIR --out DIR [--heldout-frac 0.01] [--seed S]\n"
        "  reads DIR/<source>/{meta.json, *.txt | *.mo} (as scripts/build-corpus.sh writes them) and writes\n"
        "  train.txt, heldout.txt, heldout_zh.txt, heldout_en.txt (documents separated by blank lines),\n"
        "  parallel.jsonl ({\"en\", \"zh\", \"catalog\"} pairs) and manifest.json into --out\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"raw", "out", "heldout-frac", "seed", "help"}); !u.empty()) {
    return report("build-corpus", invalid_argument("unknown flag(s) " + u));
  }
  CorpusOptions opts;
  opts.raw_dir = a.str("raw");
  opts.out_dir = a.str("out");
  auto frac = a.f64("heldout-frac", 0.01);
  auto seed = a.i64("seed", 1);
  if (!frac) return report("build-corpus", frac.status());
  if (!seed) return report("build-corpus", seed.status());
  opts.heldout_frac = *frac;
  opts.seed = static_cast<uint64_t>(*seed);
  auto r = build_corpus(opts);
  if (!r) return report("build-corpus", r.status());
  const SourceStats& t = r->totals;
  for (const auto& s : r->sources) {
    std::fprintf(stderr,
                 "build-corpus: %-24s %8.2f MB raw -> %7.2f MB kept (zh %.2f, en %.2f), %7llu docs, %6llu dup docs\n",
                 s.name.c_str(), s.raw_bytes / 1e6, s.kept_bytes / 1e6, s.zh_bytes / 1e6, s.en_bytes / 1e6,
                 (unsigned long long)s.n_documents, (unsigned long long)s.duplicate_documents);
  }
  std::fprintf(stderr,
               "build-corpus: total %.2f MB kept (zh %.2f MB, en %.2f MB), %llu documents (%llu held out), "
               "%llu parallel pairs, %llu Han characters, %llu Latin letters -> %s\n",
               t.kept_bytes / 1e6, t.zh_bytes / 1e6, t.en_bytes / 1e6, (unsigned long long)t.n_documents,
               (unsigned long long)t.n_heldout, (unsigned long long)t.n_pairs, (unsigned long long)t.han,
               (unsigned long long)t.latin, opts.out_dir.c_str());
  return 0;
}

}  // namespace pocket::train::cli
