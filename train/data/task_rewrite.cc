// The rewriting task: a sentence with injected errors (typos, misspellings, wrong characters, chat-style
// register, broken punctuation and capitalisation) -> the clean sentence. One in ten inputs is already
// correct and is answered unchanged, so the model learns to copy as well as to fix.
#include <cctype>

#include "data/task_gen.h"

namespace pocket::train::taskgen {
namespace {

// Slots: {name}, {city}, {day}, {time}, {item}.
const std::vector<std::string>& clean_en() {
  static const std::vector<std::string> k = {
      "{name} will arrive in {city} on {day}.",
      "Please send the invoice to my new address.",
      "I definitely received the package yesterday.",
      "We are going to {city} tomorrow because the meeting was moved.",
      "Could you please tell me when the store opens?",
      "Thanks for your help, I really appreciate it.",
      "{name} and I are meeting at {time} on {day}.",
      "I have already paid for the order, but it still says unpaid.",
      "The weather in {city} is much better than I expected.",
      "Let me know which colour you prefer.",
      "Your order has been shipped and should arrive on {day}.",
      "I would like to separate these items into two orders.",
      "It's too late to change the address now.",
      "They said their flight to {city} was delayed.",
      "Do you know where {name} put the keys?",
      "I think you're right about the price.",
      "Please let me know if you have any questions.",
      "{name} recommended this restaurant in {city}.",
      "I'm writing to ask about my refund.",
      "We received your message and will reply within two days.",
      "Could you please call me back at {time}?",
      "I will wait until {day} before I send it back.",
      "{name} is much taller than his brother.",
      "Are you sure the store in {city} is open on {day}?",
      "{name} already sent you the {item}.",
      "I don't know when the {item} will arrive.",
      "Does the {item} come in another colour?",
      "{name} thinks the {item} is really good value.",
  };
  return k;
}

const std::vector<std::string>& clean_zh() {
  static const std::vector<std::string> k = {
      "{name}明天要去{city}出差。",
      "我已经收到快递了，谢谢你。",
      "这件衣服的颜色我很喜欢。",
      "请问你们的店几点开门？",
      "他跑得很快，一下子就不见了。",
      "她认真地检查了每一个包裹。",
      "因为下雨，我们的会议改到{day}了。",
      "你怎么还没有回复我的消息？",
      "这样做的话，我们就能按时完成了。",
      "我再也不想在这家店买东西了。",
      "{name}在{city}等你，你快点来吧。",
      "请在{day}之前把发票发给我。",
      "我们需要再讨论一下这个问题。",
      "我不知道{name}在哪里。",
      "这个价格比我想象的便宜多了。",
      "谢谢你的帮助，我非常感激。",
      "{name}的账号已经注销了。",
      "我觉得他说得很有道理。",
      "请问什么时候可以退款？",
      "我们{day}{time}在公司见面吧。",
      "{name}说{city}的天气比这里好多了。",
      "你知道这个包裹是谁寄的吗？",
      "{name}已经把{item}寄给你了。",
      "因为{city}下雨，{name}的航班推迟了。",
      "{name}觉得这个{item}的颜色很好看。",
      "我不知道{item}什么时候能到。",
      "请问{item}有没有别的颜色？",
      "{name}说得对，我们应该再等一下。",
      "{name}认真地看了{item}的说明书。",
      "这样的话，{item}{day}就能送到了。",
      "你怎么知道{name}在{city}？",
      "我们需要在{day}之前完成这个项目。",
      "{name}非常喜欢{city}的天气。",
      "这个{item}比上次买的便宜多了。",
      "{name}{day}{time}会给你回电话。",
  };
  return k;
}

const std::vector<Bi>& items() {
  static const std::vector<Bi> k = {{"headphones", "耳机"}, {"desk lamp", "台灯"},   {"power bank", "充电宝"},
                                    {"phone case", "手机壳"}, {"backpack", "双肩包"}, {"thermos", "保温杯"},
                                    {"dress", "连衣裙"},     {"kettle", "电水壶"}};
  return k;
}

// (correct, wrong) pairs; the wrong form replaces one occurrence of the correct one.
const std::vector<std::pair<std::string, std::string>>& swaps_en() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"received", "recieved"}, {"definitely", "definately"}, {"tomorrow", "tommorow"}, {"address", "adress"},
      {"because", "becuase"},   {"because", "cuz"},          {"please", "pls"},        {"Please", "pls"},
      {"Thanks", "Thx"},        {"you", "u"},                {"your", "ur"},           {"Your", "ur"},
      {"you're", "your"},       {"are", "r"},                {"I ", "i "},             {"I'm", "im"},
      {"It's", "its"},          {"separate", "seperate"},    {"until", "untill"},      {"which", "wich"},
      {"their", "there"},       {"really", "realy"},         {"weather", "whether"},   {"going to", "gonna"},
      {"too", "to"},            {"than", "then"},            {"already", "allready"},  {"appreciate", "apreciate"},
      {"recommended", "reccomended"}, {"restaurant", "restaraunt"}, {"message", "mesage"}, {"Could you", "could u"},
      {"know", "kno"},          {"questions", "qs"},         {"writing", "writting"},  {"meeting", "meting"},
  };
  return k;
}

const std::vector<std::pair<std::string, std::string>>& swaps_zh() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"已经", "以经"}, {"跑得", "跑的"}, {"说得", "说的"}, {"认真地", "认真的"}, {"再也", "在也"},
      {"再讨论", "在讨论"}, {"在哪里", "再哪里"}, {"在公司", "再公司"}, {"因为", "应为"}, {"怎么", "肿么"},
      {"什么", "神马"}, {"没有", "木有"}, {"这样", "酱紫"}, {"喜欢", "稀饭"}, {"需要", "须要"},
      {"账号", "帐号"}, {"问题", "问提"}, {"检查", "检察"}, {"觉得", "觉的"}, {"知道", "知到"},
      {"完成", "完城"}, {"便宜", "便意"}, {"感激", "感急"}, {"谢谢", "3q"}, {"包裹", "包果"},
      {"天气", "天汽"}, {"一下子", "一下字"}, {"注销", "注消"},
  };
  return k;
}

bool replace_first(std::string* s, const std::string& from, const std::string& to) {
  const size_t p = s->find(from);
  if (p == std::string::npos) return false;
  s->replace(p, from.size(), to);
  return true;
}

// One error of the kind numbered `op`; returns false when it does not apply to `s`.
bool corrupt_en(Rng& r, int op, std::string* s) {
  if (s->size() < 4) return false;
  switch (op) {
    case 0: case 1: case 2: {  // misspelling or chat register
      std::vector<std::pair<std::string, std::string>> apply;
      for (const auto& sw : swaps_en()) {
        if (contains(*s, sw.first)) apply.push_back(sw);
      }
      if (apply.empty()) return false;
      const auto& sw = r.pick(apply);
      return replace_first(s, sw.first, sw.second);
    }
    case 3: {  // adjacent letters swapped inside a word
      for (int tries = 0; tries < 8; ++tries) {
        const size_t p = static_cast<size_t>(r.range(1, static_cast<int>(s->size()) - 3));
        if (std::islower(static_cast<unsigned char>((*s)[p - 1])) && std::islower(static_cast<unsigned char>((*s)[p])) &&
            std::islower(static_cast<unsigned char>((*s)[p + 1])) && (*s)[p] != (*s)[p + 1]) {
          std::swap((*s)[p], (*s)[p + 1]);
          return true;
        }
      }
      return false;
    }
    case 4:  // no capital at the start
      if (!std::isupper(static_cast<unsigned char>((*s)[0]))) return false;
      (*s)[0] = static_cast<char>(std::tolower(static_cast<unsigned char>((*s)[0])));
      return true;
    case 5:  // final punctuation dropped or doubled
      if (r.chance(0.6)) s->pop_back();
      else s->push_back(s->back() == '?' ? '?' : '.');
      return true;
    case 6: {  // space before a comma or the final mark
      const size_t p = s->find(", ");
      if (p != std::string::npos && r.chance(0.5)) {
        s->insert(p, 1, ' ');
      } else {
        s->insert(s->size() - 1, 1, ' ');
      }
      return true;
    }
    default: {  // a letter doubled or dropped
      for (int tries = 0; tries < 8; ++tries) {
        const size_t p = static_cast<size_t>(r.range(1, static_cast<int>(s->size()) - 2));
        if (std::islower(static_cast<unsigned char>((*s)[p])) && std::islower(static_cast<unsigned char>((*s)[p - 1]))) {
          if (r.chance(0.5)) s->insert(p, 1, (*s)[p]);
          else s->erase(p, 1);
          return true;
        }
      }
      return false;
    }
  }
}

bool corrupt_zh(Rng& r, int op, std::string* s) {
  switch (op) {
    case 0: case 1: case 2: case 3: {  // wrong character or internet register
      std::vector<std::pair<std::string, std::string>> apply;
      for (const auto& sw : swaps_zh()) {
        if (contains(*s, sw.first)) apply.push_back(sw);
      }
      if (apply.empty()) return false;
      const auto& sw = r.pick(apply);
      return replace_first(s, sw.first, sw.second);
    }
    case 4:  // ASCII punctuation in a Chinese sentence
      return replace_first(s, "，", ",") || replace_first(s, "？", "?");
    case 5:  // final mark dropped, doubled or half-width
      if (s->size() >= 3 && (s->compare(s->size() - 3, 3, "。") == 0 || s->compare(s->size() - 3, 3, "？") == 0)) {
        const std::string last = s->substr(s->size() - 3);
        s->resize(s->size() - 3);
        const int k = r.below(3);
        if (k == 1) *s += last + last;
        else if (k == 2) *s += last == "。" ? "." : "?";
        return true;
      }
      return false;
    default:  // comma dropped (run-on) or space inserted
      if (r.chance(0.5)) return replace_first(s, "，", "");
      return replace_first(s, "，", " ");
  }
}

}  // namespace

TaskExample gen_rewrite(Rng& r, Lang l) {
  const std::string clean =
      fill(r.pick(l == Lang::kZh ? clean_zh() : clean_en()), {{"name", r.pick(person_names()).in(l)},
                                                               {"city", r.pick(cities()).in(l)},
                                                               {"day", r.pick(weekdays()).in(l)},
                                                               {"time", clock_time(r, l)},
                                                               {"item", r.pick(items()).in(l)}});
  std::string noisy = clean;
  if (!r.chance(0.1)) {
    const int n_errors = l == Lang::kZh ? r.range(1, 2) : r.range(1, 3);
    for (int i = 0, tries = 0; i < n_errors && tries < 12; ++tries) {
      const bool ok = l == Lang::kZh ? corrupt_zh(r, r.below(7), &noisy) : corrupt_en(r, r.below(8), &noisy);
      if (ok) ++i;
    }
  }
  TaskExample e;
  e.task = TaskKind::kRewrite;
  e.lang = l;
  e.prompt = (l == Lang::kZh ? "改正句子：" : "Correct the sentence: ") + noisy;
  e.answer = clean;
  return e;
}

}  // namespace pocket::train::taskgen
