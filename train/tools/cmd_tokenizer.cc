// `pocket-train train-tokenizer` (text files -> a byte-level BPE tokenizer section) and `pocket-train
// vocab-study` (one training run cut to several vocabulary sizes: tokens per character on held-out Chinese
// and English, the embedding/head share of parameters, decode bytes per character; table, JSON and plot).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "data/bpe_trainer.h"
#include "model/hparams.h"
#include "run/checkpoint.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_data.h"
#include "tokenizer/utf8.h"

namespace pocket::train::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> input_files(const Args& a) {
  std::vector<std::string> files = a.all("in");
  for (const std::string& p : a.all("")) files.push_back(p);
  return files;
}

// Reads (a sample of) the files, counts words and learns merges, reporting progress on stderr.
Expected<std::unique_ptr<BpeTrainer>> run_training(const std::vector<std::string>& files, int64_t max_bytes,
                                                   int32_t vocab, int64_t min_freq, int64_t max_token_bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  POCKET_ASSIGN_OR_RETURN(std::string text, read_training_text(files, max_bytes));
  BpeTrainOptions o;
  o.vocab_size = vocab;
  o.min_frequency = min_freq;
  o.max_token_bytes = static_cast<int32_t>(std::min<int64_t>(max_token_bytes, 1 << 30));
  o.progress_every = 2000;
  o.progress = [t0](int32_t n, int64_t count) {
    std::fprintf(stderr, "  %d merges, last pair seen %lld times, %.1f s\n", n, static_cast<long long>(count),
                 seconds_since(t0));
  };
  POCKET_ASSIGN_OR_RETURN(auto trainer, BpeTrainer::create(o));
  POCKET_RETURN_IF_ERROR(trainer->add_text(text));
  const BpeTrainStats& s = trainer->stats();
  std::fprintf(stderr, "counted %lld bytes: %lld words (%.1f s)\n", static_cast<long long>(s.n_bytes),
               static_cast<long long>(s.n_words), seconds_since(t0));
  std::string().swap(text);
  POCKET_RETURN_IF_ERROR(trainer->train());
  std::fprintf(stderr,
               "trained: %lld distinct words, %d merges (skipped: %d duplicates, %d too long), last pair "
               "seen %lld times%s, "
               "%.1f s\n",
               static_cast<long long>(s.n_distinct_words), s.n_merges, s.n_skipped_duplicates,
               s.n_skipped_long, static_cast<long long>(s.last_pair_count),
               s.stopped_by_min_frequency ? " (stopped by --min-freq)" : "", seconds_since(t0));
  return trainer;
}

Expected<std::vector<int64_t>> parse_sizes(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const int64_t v = std::stoll(item, &used);
      if (used != item.size() || v <= 0) throw 0;
      out.push_back(v);
    } catch (...) {
      return invalid_argument("--sizes expects comma-separated positive integers, got '" + text + "'");
    }
  }
  if (out.empty()) return invalid_argument("--sizes is empty");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t count_chars(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

struct HeldOut {
  std::string name, text, nfc;
  int64_t n_chars = 0;
};

Expected<HeldOut> read_heldout(const std::string& name, const std::string& path, int64_t max_bytes) {
  HeldOut h;
  h.name = name;
  POCKET_ASSIGN_OR_RETURN(h.text, read_training_text({path}, max_bytes));
  h.n_chars = count_chars(h.text);
  if (h.n_chars == 0) return invalid_argument("held-out file " + path + " is empty");
  std::string storage;
  POCKET_RETURN_IF_ERROR(append_nfc(sanitize_utf8(h.text, &storage), &h.nfc));
  return h;
}

struct Row {
  int64_t vocab = 0;
  double tok_per_char[2] = {0, 0};  // zh, en
  bool lossless[2] = {false, false};
  uint64_t params_tied = 0, params_untied = 0;
  double emb_share_tied = 0, emb_share_untied = 0;
  double decode_bytes_per_token = 0;  // weights streamed per decode step at `bits` per weight
  double decode_bytes_per_char[2] = {0, 0};
  double train_flops_per_char[2] = {0, 0};
  double split_chars[2] = {0, 0};  // share of non-ASCII characters cut across tokens (byte fallback at work)
};

Status draw_plot(const std::string& dir, const std::vector<Row>& rows) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return unsupported("gnuplot is not installed; vocab_study.png not drawn (apt-get install gnuplot-nox)");
  }
  const std::string dat = dir + "/vocab_study.dat", gp_path = dir + "/vocab_study.gp";
  {
    std::ofstream d(dat);
    d << "# vocab zh_tok_per_char en_tok_per_char emb_share_tied emb_share_untied decode_kb_per_char_zh "
         "decode_kb_per_char_en\n";
    for (const Row& r : rows) {
      d << r.vocab << " " << r.tok_per_char[0] << " " << r.tok_per_char[1] << " " << 100 * r.emb_share_tied
        << " " << 100 * r.emb_share_untied << " " << r.decode_bytes_per_char[0] / 1024 << " "
        << r.decode_bytes_per_char[1] / 1024 << "\n";
    }
  }
  auto script = [&](const std::string& terminal) {
    std::ofstream gp(gp_path);
    gp << "set terminal " << terminal << " size 1350,420 noenhanced\n"
       << "set output '" << dir << "/vocab_study.png'\n"
       << "set multiplot layout 1,3\nset logscale x 2\nset grid\nset xlabel 'vocabulary size'\n"
       << "set key top right\n"
       << "set title 'tokens per character (held-out)'\n"
       << "plot '" << dat << "' u 1:2 w linespoints lw 2 pt 7 t 'Chinese', '' u 1:3 w linespoints lw 2 pt 5 "
       << "t 'English'\n"
       << "set title 'embedding + head share of parameters (%)'\nset key top left\nset yrange [0:100]\n"
       << "plot '" << dat << "' u 1:4 w linespoints lw 2 pt 7 t 'tied', '' u 1:5 w linespoints lw 2 pt 5 "
       << "t 'untied'\n"
       << "set title 'decode: weight KiB streamed per character'\nset autoscale y\nset key top left\n"
       << "plot '" << dat << "' u 1:6 w linespoints lw 2 pt 7 t 'Chinese', '' u 1:7 w linespoints lw 2 pt 5 "
       << "t 'English'\n"
       << "unset multiplot\n";
  };
  script("pngcairo");
  if (std::system(("gnuplot '" + gp_path + "' 2>/dev/null").c_str()) != 0) {
    script("png");  // pngcairo may be missing in minimal builds
    if (std::system(("gnuplot '" + gp_path + "'").c_str()) != 0)
      return io_error("gnuplot failed on " + gp_path);
  }
  return Status::ok();
}

// The share of the multi-byte characters of `text` (= the decoded ids) that some token boundary cuts through:
// those characters reach the model as byte pieces, not as one token or part of a longer one.
double split_share(const Tokenizer& tok, const std::vector<int32_t>& ids, const std::string& text) {
  std::vector<uint8_t> boundary(text.size() + 1, 0);
  size_t pos = 0;
  boundary[0] = 1;
  for (int32_t id : ids) {
    pos += tok.token_bytes(id).size();
    if (pos > text.size()) return -1;
    boundary[pos] = 1;
  }
  int64_t n = 0, cut = 0;
  for (size_t i = 0; i < text.size();) {
    size_t e = i + 1;
    while (e < text.size() && (static_cast<uint8_t>(text[e]) & 0xC0) == 0x80) ++e;
    if (e - i > 1) {
      ++n;
      cut += std::any_of(boundary.begin() + static_cast<ptrdiff_t>(i) + 1,
                         boundary.begin() + static_cast<ptrdiff_t>(e), [](uint8_t b) { return b != 0; });
    }
    i = e;
  }
  return n > 0 ? static_cast<double>(cut) / n : 0;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int cmd_train_tokenizer(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("out") || input_files(a).empty()) {
    std::printf(
        "usage: pocket-train train-tokenizer --in FILE [--in FILE ...] --vocab N -o tokenizer.bin\n"
        "         [--max-bytes B] [--min-freq F] [--max-token-bytes N]\n"
        "  byte-level BPE with byte fallback, the bilingual 'pocket' pre-tokenizer, NFC, specials\n"
        "  <|endoftext|> (EOS) <|im_start|> <|im_end|>, chat template chatml.\n"
        "  --max-bytes: sample B bytes spread over the files (default: all of them)\n"
        "  --min-freq: never merge a pair seen fewer than F times (default 2)\n"
        "  --max-token-bytes: no token longer than N bytes (default 64)\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"in", "vocab", "out", "max-bytes", "min-freq", "max-token-bytes", "help"});
      !u.empty()) {
    return report("train-tokenizer", invalid_argument("unknown flag(s) " + u));
  }
  auto vocab = a.i64("vocab", 32768);
  auto max_bytes = a.i64("max-bytes", 0);
  auto min_freq = a.i64("min-freq", 2);
  auto max_token = a.i64("max-token-bytes", 64);
  for (const auto* e : {&vocab, &max_bytes, &min_freq, &max_token}) {
    if (!e->has_value()) return report("train-tokenizer", e->status());
  }
  if (*vocab > kMaxVocab) return report("train-tokenizer", invalid_argument("--vocab is too large"));
  auto trainer =
      run_training(input_files(a), *max_bytes, static_cast<int32_t>(*vocab), *min_freq, *max_token);
  if (!trainer) return report("train-tokenizer", trainer.status());
  auto tok = build_tokenizer((*trainer)->tokenizer_data());
  if (!tok) return report("train-tokenizer", tok.status());
  Status st = write_binary_file(a.str("out"), (*tok)->serialize());
  if (!st.is_ok()) return report("train-tokenizer", st);
  std::printf("wrote %s: %d tokens, %d merges\n", a.str("out").c_str(), (*tok)->n_vocab(),
              (*trainer)->stats().n_merges);
  return 0;
}

int cmd_vocab_study(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("out") || input_files(a).empty() || !a.has("heldout-zh") ||
      !a.has("heldout-en")) {
    std::printf(
        "usage: pocket-train vocab-study --in TRAIN.txt --heldout-zh ZH.txt --heldout-en EN.txt -o DIR\n"
        "         [--sizes 4096,8192,16384,32768,65536] [--max-bytes B] [--min-freq F]\n"
        "         [--max-token-bytes N] [--heldout-max-bytes B (default 4 MiB, sampled like --max-bytes)]\n"
        "         [--n-embd 256 --n-layers 7 --n-heads 8 --n-kv-heads 4 --n-ff 688] [--bits 4.5]\n"
        "         [--no-plot]\n"
        "  trains once to the largest size and cuts the merge list for the smaller ones; writes\n"
        "  DIR/vocab_study.md, .json, .png (gnuplot) and DIR/tokenizer_N.bin for every size.\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"in", "heldout-zh", "heldout-en", "out", "sizes", "max-bytes", "min-freq",
                                 "max-token-bytes", "heldout-max-bytes", "n-embd", "n-layers", "n-heads",
                                 "n-kv-heads", "n-ff", "head-dim", "bits", "no-plot", "help"});
      !u.empty()) {
    return report("vocab-study", invalid_argument("unknown flag(s) " + u));
  }
  auto sizes = parse_sizes(a.str("sizes", "4096,8192,16384,32768,65536"));
  if (!sizes) return report("vocab-study", sizes.status());
  HParams h;
  auto max_bytes = a.i64("max-bytes", 0), min_freq = a.i64("min-freq", 2),
       heldout_max = a.i64("heldout-max-bytes", 4 << 20), n_embd = a.i64("n-embd", 256),
       n_layers = a.i64("n-layers", 7), n_heads = a.i64("n-heads", 8), n_kv = a.i64("n-kv-heads", 4),
       n_ff = a.i64("n-ff", 688), head_dim = a.i64("head-dim", 0), max_token = a.i64("max-token-bytes", 64);
  for (const auto* e : {&max_bytes, &min_freq, &heldout_max, &n_embd, &n_layers, &n_heads, &n_kv, &n_ff,
                        &head_dim, &max_token}) {
    if (!e->has_value()) return report("vocab-study", e->status());
  }
  auto bits = a.f64("bits", 4.5);
  if (!bits) return report("vocab-study", bits.status());
  h.n_embd = *n_embd;
  h.n_layers = *n_layers;
  h.n_heads = *n_heads;
  h.n_kv_heads = *n_kv;
  h.n_ff = *n_ff;
  h.head_dim = *head_dim > 0 ? *head_dim : (*n_heads > 0 ? *n_embd / *n_heads : 0);
  h.n_ctx_train = 256;
  h.n_vocab = sizes->back();
  if (Status st = h.validate(); !st.is_ok()) return report("vocab-study", st);

  const std::string dir = a.str("out");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return report("vocab-study", io_error("cannot create " + dir + ": " + ec.message()));

  HeldOut held[2];
  {
    auto zh = read_heldout("zh", a.str("heldout-zh"), *heldout_max);
    if (!zh) return report("vocab-study", zh.status());
    auto en = read_heldout("en", a.str("heldout-en"), *heldout_max);
    if (!en) return report("vocab-study", en.status());
    held[0] = std::move(*zh);
    held[1] = std::move(*en);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto trainer =
      run_training(input_files(a), *max_bytes, static_cast<int32_t>(sizes->back()), *min_freq, *max_token);
  if (!trainer) return report("vocab-study", trainer.status());
  const double train_seconds = seconds_since(t0);
  const TokenizerData full = (*trainer)->tokenizer_data();
  const BpeTrainStats stats = (*trainer)->stats();
  trainer->reset();

  std::vector<Row> rows;
  for (int64_t n : *sizes) {
    if (n > static_cast<int64_t>(full.pieces.size())) {
      std::fprintf(stderr, "vocab %lld skipped: training stopped at %zu tokens\n", static_cast<long long>(n),
                   full.pieces.size());
      continue;
    }
    auto prefix = bpe_vocabulary_prefix(full, static_cast<int32_t>(n));
    if (!prefix) return report("vocab-study", prefix.status());
    auto tok = build_tokenizer(std::move(*prefix));
    if (!tok) return report("vocab-study", tok.status());
    Status st = write_binary_file(dir + "/tokenizer_" + std::to_string(n) + ".bin", (*tok)->serialize());
    if (!st.is_ok()) return report("vocab-study", st);
    Row r;
    r.vocab = n;
    HParams hv = h;
    hv.n_vocab = n;
    hv.tied_embeddings = true;
    r.params_tied = hv.n_params();
    hv.tied_embeddings = false;
    r.params_untied = hv.n_params();
    const double emb = static_cast<double>(n) * h.n_embd;
    r.emb_share_tied = emb / static_cast<double>(r.params_tied);
    r.emb_share_untied = 2 * emb / static_cast<double>(r.params_untied);
    // Per decode step every weight but the embedding table is read once, the head included (for a tied model
    // the head *is* the table); the one embedding row looked up is negligible. KV cache not counted.
    const double streamed = static_cast<double>(r.params_tied);
    r.decode_bytes_per_token = streamed * *bits / 8.0;
    for (int k = 0; k < 2; ++k) {
      const auto t1 = std::chrono::steady_clock::now();
      std::vector<int32_t> ids;
      st = (*tok)->encode(held[k].text, EncodeOptions{}, &ids);
      if (!st.is_ok()) return report("vocab-study", st);
      r.tok_per_char[k] = static_cast<double>(ids.size()) / static_cast<double>(held[k].n_chars);
      r.lossless[k] = (*tok)->decode(ids) == held[k].nfc;
      r.split_chars[k] = split_share(**tok, ids, held[k].nfc);
      r.decode_bytes_per_char[k] = r.tok_per_char[k] * r.decode_bytes_per_token;
      // Training: ~6 FLOPs per weight per token for every matrix product (forward + backward); the embedding
      // lookup is free, the head is not.
      r.train_flops_per_char[k] = 6.0 * streamed * r.tok_per_char[k];
      std::fprintf(stderr, "vocab %lld %s: %zu tokens for %lld chars (%.3f tok/char)%s, %.1f s\n",
                   static_cast<long long>(n), held[k].name.c_str(), ids.size(),
                   static_cast<long long>(held[k].n_chars), r.tok_per_char[k],
                   r.lossless[k] ? "" : " NOT LOSSLESS", seconds_since(t1));
    }
    rows.push_back(r);
  }

  // JSON
  nlohmann::json j;
  j["machine_note"] = "see docs/vocabulary.md";
  j["inputs"] = input_files(a);
  j["heldout"] = {
      {"zh", {{"path", a.str("heldout-zh")}, {"chars", held[0].n_chars}, {"bytes", held[0].text.size()}}},
      {"en", {{"path", a.str("heldout-en")}, {"chars", held[1].n_chars}, {"bytes", held[1].text.size()}}}};
  j["training"] = {{"max_bytes", *max_bytes},
                   {"min_freq", *min_freq},
                   {"bytes", stats.n_bytes},
                   {"words", stats.n_words},
                   {"distinct_words", stats.n_distinct_words},
                   {"merges", stats.n_merges},
                   {"skipped_duplicates", stats.n_skipped_duplicates},
                   {"skipped_long", stats.n_skipped_long},
                   {"max_token_bytes", *max_token},
                   {"seconds", train_seconds}};
  j["model"] = {{"n_embd", h.n_embd},         {"n_layers", h.n_layers}, {"n_heads", h.n_heads},
                {"n_kv_heads", h.n_kv_heads}, {"n_ff", h.n_ff},         {"bits_per_weight", *bits}};
  for (const Row& r : rows) {
    j["rows"].push_back({{"vocab", r.vocab},
                         {"tok_per_char_zh", r.tok_per_char[0]},
                         {"tok_per_char_en", r.tok_per_char[1]},
                         {"lossless_zh", r.lossless[0]},
                         {"lossless_en", r.lossless[1]},
                         {"params_tied", r.params_tied},
                         {"params_untied", r.params_untied},
                         {"emb_share_tied", r.emb_share_tied},
                         {"emb_head_share_untied", r.emb_share_untied},
                         {"decode_bytes_per_token", r.decode_bytes_per_token},
                         {"decode_bytes_per_char_zh", r.decode_bytes_per_char[0]},
                         {"decode_bytes_per_char_en", r.decode_bytes_per_char[1]},
                         {"train_flops_per_char_zh", r.train_flops_per_char[0]},
                         {"train_flops_per_char_en", r.train_flops_per_char[1]},
                         {"split_chars_zh", r.split_chars[0]},
                         {"split_chars_en", r.split_chars[1]}});
  }
  std::ofstream(dir + "/vocab_study.json") << j.dump(1) << "\n";

  // Markdown table
  std::ostringstream md;
  md << "Model: n_embd " << h.n_embd << ", " << h.n_layers << " layers, " << h.n_heads << " heads ("
     << h.n_kv_heads << " KV), n_ff " << h.n_ff << "; decode at " << *bits
     << " bits per weight. Training text: " << stats.n_bytes << " bytes (" << stats.n_distinct_words
     << " distinct words), " << stats.n_merges << " merges in " << fmt("%.0f", train_seconds)
     << " s. Held-out: " << held[0].n_chars << " Chinese, " << held[1].n_chars << " English characters.\n\n"
     << "| vocab | tok/char zh | tok/char en | chars/tok zh | chars/tok en | params (tied) | emb share tied "
        "| "
        "emb+head share untied | KiB/token (decode) | decode KiB/char zh | decode KiB/char en | "
        "train MFLOP/char zh | train MFLOP/char en | zh chars cut into bytes | lossless |\n"
     << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:-:|\n";
  for (const Row& r : rows) {
    md << "| " << r.vocab << " | " << fmt("%.3f", r.tok_per_char[0]) << " | "
       << fmt("%.3f", r.tok_per_char[1]) << " | " << fmt("%.2f", 1 / r.tok_per_char[0]) << " | "
       << fmt("%.2f", 1 / r.tok_per_char[1]) << " | " << fmt("%.2fM", r.params_tied / 1e6) << " | "
       << fmt("%.1f %%", 100 * r.emb_share_tied) << " | " << fmt("%.1f %%", 100 * r.emb_share_untied) << " | "
       << fmt("%.0f", r.decode_bytes_per_token / 1024) << " | "
       << fmt("%.0f", r.decode_bytes_per_char[0] / 1024) << " | "
       << fmt("%.0f", r.decode_bytes_per_char[1] / 1024) << " | "
       << fmt("%.1f", r.train_flops_per_char[0] / 1e6) << " | "
       << fmt("%.1f", r.train_flops_per_char[1] / 1e6) << " | " << fmt("%.1f %%", 100 * r.split_chars[0])
       << " | " << (r.lossless[0] && r.lossless[1] ? "yes" : "NO") << " |\n";
  }
  std::ofstream(dir + "/vocab_study.md") << md.str();
  std::printf("%s", md.str().c_str());
  if (!a.has("no-plot")) {
    Status st = draw_plot(dir, rows);
    if (!st.is_ok()) std::fprintf(stderr, "vocab-study: %s\n", st.to_string().c_str());
  }
  std::printf("wrote %s/vocab_study.md, .json%s\n", dir.c_str(), a.has("no-plot") ? "" : ", .png");
  return 0;
}

}  // namespace pocket::train::cli
