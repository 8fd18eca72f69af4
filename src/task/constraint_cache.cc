// make_json_constraint / make_grammar_constraint: compiled grammars cached per vocabulary and grammar text,
// so a schema an app sends with every request is compiled (and its masks computed) once per process.
#include <list>
#include <mutex>

#include "constrain/gbnf.h"
#include "constrain/grammar_constraint.h"
#include "constrain/json_schema.h"
#include "constrain/vocab_index.h"
#include "task/schema_grounding.h"
#include "task/task.h"

namespace pocket {

namespace {

// The vocabulary's identity: the package's tokenizer section (its checksum and size), so two packages with
// the same tokenizer share one index and a freed model's address can never be mistaken for another's.
std::string vocab_key(const Model& model) {
  for (const SectionEntry& e : model.package().sections()) {
    if (e.kind == static_cast<uint32_t>(SectionKind::kTokenizer)) {
      return std::to_string(e.checksum) + ":" + std::to_string(e.size) + ":" + std::to_string(model.hparams().n_vocab);
    }
  }
  return "addr:" + std::to_string(reinterpret_cast<uintptr_t>(&model.tokenizer()));
}

class GrammarCache {
 public:
  static GrammarCache& instance() {
    static GrammarCache c;
    return c;
  }

  Expected<std::shared_ptr<const VocabIndex>> vocab(const Model& model, const std::string& key) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [k, v] : vocabs_) {
        if (k == key) return v;
      }
    }
    // Built outside the lock (a 151k vocabulary takes a while); a racing builder's copy is dropped.
    std::shared_ptr<const VocabIndex> built = VocabIndex::build(model.tokenizer());
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, v] : vocabs_) {
      if (k == key) return v;
    }
    if (vocabs_.size() >= kMaxVocabs) vocabs_.pop_front();
    vocabs_.emplace_back(key, built);
    return built;
  }

  std::shared_ptr<CompiledGrammar> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = grammars_.begin(); it != grammars_.end(); ++it) {
      if (it->first == key) {
        grammars_.splice(grammars_.begin(), grammars_, it);  // most recently used first
        return it->second;
      }
    }
    return nullptr;
  }

  void put(const std::string& key, std::shared_ptr<CompiledGrammar> g) {
    std::lock_guard<std::mutex> lock(mu_);
    grammars_.emplace_front(key, std::move(g));
    if (grammars_.size() > kMaxGrammars) grammars_.pop_back();
  }

 private:
  static constexpr size_t kMaxVocabs = 4;
  static constexpr size_t kMaxGrammars = 32;
  std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<const VocabIndex>>> vocabs_;
  std::list<std::pair<std::string, std::shared_ptr<CompiledGrammar>>> grammars_;
};

// The cached compiled grammar for (vocabulary, kind, text), compiling it with `compile` on a miss.
template <typename Compile>
Expected<std::shared_ptr<CompiledGrammar>> cached(const Model& model, std::string_view kind, std::string_view text,
                                                  Compile&& compile) {
  GrammarCache& cache = GrammarCache::instance();
  const std::string vkey = vocab_key(model);
  std::string key = vkey;
  key += '\0';
  key += kind;
  key += '\0';
  key += text;
  if (std::shared_ptr<CompiledGrammar> g = cache.find(key)) return g;
  POCKET_ASSIGN_OR_RETURN(Grammar grammar, compile());
  POCKET_ASSIGN_OR_RETURN(std::shared_ptr<const VocabIndex> vocab, cache.vocab(model, vkey));
  POCKET_ASSIGN_OR_RETURN(std::shared_ptr<CompiledGrammar> g, CompiledGrammar::create(std::move(grammar), vocab));
  cache.put(key, g);
  return g;
}

}  // namespace

Expected<std::unique_ptr<TokenConstraint>> make_json_constraint(const Model& model, std::string_view schema_json,
                                                                std::string_view source_text, bool ground_strings) {
  std::string text(schema_json);
  if (!schema_json.empty()) {
    nlohmann::ordered_json schema = nlohmann::ordered_json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) {
      auto g = compile_json_schema(schema_json, {});  // reports where the JSON breaks
      return g ? invalid_argument("[json-schema] malformed JSON") : g.status();
    }
    if (schema.is_object() && (ground_strings || has_grounded_numbers(schema, false))) {
      // Grounded strings are marked "x-pocket-copy"; grounded numbers become an enum of this text's numbers.
      POCKET_ASSIGN_OR_RETURN(nlohmann::ordered_json grounded, ground_schema(schema, source_text, ground_strings));
      text = grounded.dump();
    }
  }
  POCKET_ASSIGN_OR_RETURN(std::shared_ptr<CompiledGrammar> g,
                          cached(model, "json", text, [&] { return compile_json_schema(text, JsonSchemaOptions{}); }));
  return g->start(source_text);
}

Expected<std::unique_ptr<TokenConstraint>> make_grammar_constraint(const Model& model, std::string_view grammar_text,
                                                                   std::string_view source_text) {
  POCKET_ASSIGN_OR_RETURN(std::shared_ptr<CompiledGrammar> g,
                          cached(model, "gbnf", grammar_text, [&] { return parse_gbnf(grammar_text); }));
  return g->start(source_text);
}

}  // namespace pocket
