// `pocket quantize IN OUT --type q4_g32|q4_g64|q8 [--embed q4|q8|f16] [--head q4|q8|f16] [--imatrix F]`.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "convert/quantize_model.h"
#include "format/package.h"
#include "quant/importance.h"

namespace pocket::cli {

void register_quantize(CLI::App& app) {
  struct Args {
    std::string in, out, type = "q4_g32", embed, head, imatrix;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("quantize", "Rewrite a package's weights in a block format (per-tensor policy)");
  c->add_option("input", a->in, "Source .pocket")->required();
  c->add_option("output", a->out, "Output .pocket")->required();
  c->add_option("--type", a->type, "Matrices: q4_g32 (q4), q4_g64, q4_g32a, q8 (q8_g32), f16, bf16, f32");
  c->add_option("--embed", a->embed, "Token embedding precision (default: --type)");
  c->add_option("--head", a->head, "Output head precision (default: --type)");
  c->add_option("--imatrix", a->imatrix,
                 "Activation statistics from `pocket imatrix`: importance-weighted block scales (docs/quantization.md)");
  c->callback([a] {
    QuantizePolicy p;
    auto t = parse_quant_type(a->type);
    if (!t) throw CLI::RuntimeError(report("quantize", invalid_argument("[quantize] unknown --type '" + a->type + "'")));
    p.matrices = *t;
    if (!a->embed.empty()) {
      p.embed = parse_quant_type(a->embed);
      if (!p.embed) throw CLI::RuntimeError(report("quantize", invalid_argument("[quantize] unknown --embed '" + a->embed + "'")));
    }
    if (!a->head.empty()) {
      p.head = parse_quant_type(a->head);
      if (!p.head) throw CLI::RuntimeError(report("quantize", invalid_argument("[quantize] unknown --head '" + a->head + "'")));
    }
    quant::ImportanceMap imp;
    if (!a->imatrix.empty()) {
      auto m = quant::read_importance(a->imatrix);
      if (!m) throw CLI::RuntimeError(report("quantize", m.status()));
      imp = std::move(*m);
      p.importance = &imp;
    }
    QuantizeReport rep;
    if (Status st = quantize_model(a->in, a->out, p, &rep); !st.is_ok()) throw CLI::RuntimeError(report("quantize", st));
    if (p.importance != nullptr) {
      std::fprintf(stderr, "pocket quantize: %d matrices fitted with importance (%llu calibration tokens), %d plain\n",
                   rep.n_weighted, static_cast<unsigned long long>(imp.n_tokens), rep.n_plain);
    }
    auto pkg = Package::open(a->out);
    std::fprintf(stderr, "pocket quantize: wrote %s (%s)\n", a->out.c_str(),
                 pkg ? format_bytes(pkg->file_size()).c_str() : "?");
  });
}

}  // namespace pocket::cli
