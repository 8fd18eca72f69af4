// The tool-choice task: 3-4 tools with their argument lists ("?" marks an optional argument) and a request
// -> {"tool":NAME,"args":{...}}. Optional arguments appear only when the request states them; a request no
// listed tool can serve (one in ten) is answered {"tool":"none","args":{}}.
#include <functional>
#include <nlohmann/json.hpp>

#include "data/task_gen.h"

namespace pocket::train::taskgen {
namespace {

struct Call {
  std::string request;
  nlohmann::ordered_json args = nlohmann::ordered_json::object();
};

struct Tool {
  const char* signature;  // as listed in the prompt
  std::function<Call(Rng&, Lang, double)> make;  // the last argument: open_values (gen_tool)
};

std::string pick_l(Rng& r, Lang l, const std::vector<std::string>& en, const std::vector<std::string>& zh) {
  return r.pick(l == Lang::kZh ? zh : en);
}

// An open draw happens only when open > 0, so the lexicon-only stream is unchanged.
bool draw_open(Rng& r, double open) { return open > 0 && r.chance(open); }

const std::vector<Tool>& tools() {
  static const std::vector<Tool> k = {
      {"get_weather(city, day?)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string city = draw_open(r, open) ? open_city(r, l) : r.pick(cities()).in(l);
         const bool has_day = r.chance(0.5);
         const std::string day = has_day ? r.pick(weekdays()).in(l) : "";
         c.args["city"] = city;
         if (has_day) c.args["day"] = day;
         if (l == Lang::kZh) {
           c.request = fill(r.pick(std::vector<std::string>{"{day}{city}天气怎么样？", "{city}{day}会下雨吗？",
                                                            "查一下{city}{day}的天气"}),
                            {{"city", city}, {"day", day}});
         } else {
           c.request = fill(r.pick(std::vector<std::string>{"what's the weather in {city}{d}?", "will it rain in {city}{d}?",
                                                            "weather forecast for {city}{d}"}),
                            {{"city", city}, {"d", has_day ? " on " + day : ""}});
         }
         return c;
       }},
      {"set_alarm(time, label?)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string time = clock_time(r, l);
         const bool has_label = r.chance(0.4);
         const std::string label = pick_l(r, l, {"gym", "meeting", "medicine", "flight"}, {"健身", "开会", "吃药", "赶飞机"});
         c.args["time"] = time;
         if (has_label) c.args["label"] = label;
         if (l == Lang::kZh) {
           c.request = has_label ? "设个" + time + "的闹钟，备注" + label
                                 : r.pick(std::vector<std::string>{time + "叫我起床", "设个" + time + "的闹钟"});
         } else {
           c.request = has_label ? "set an alarm for " + time + " called " + label
                                 : r.pick(std::vector<std::string>{"wake me up at " + time, "set an alarm for " + time});
         }
         return c;
       }},
      {"send_message(to, text)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string to = draw_open(r, open) ? open_person(r, l) : r.pick(person_names()).in(l);
         const std::string text = pick_l(r, l, {"I'll be late", "the meeting is cancelled", "dinner is ready",
                                                "see you at the station", "call me back"},
                                         {"我晚点到", "会议取消了", "晚饭好了", "车站见", "给我回个电话"});
         c.args["to"] = to;
         c.args["text"] = text;
         c.request = l == Lang::kZh ? fill(r.pick(std::vector<std::string>{"给{to}发消息说{t}", "告诉{to}{t}",
                                                                          "发微信给{to}：{t}"}),
                                           {{"to", to}, {"t", text}})
                                    : fill(r.pick(std::vector<std::string>{"text {to} that {t}", "send {to} a message: {t}",
                                                                          "tell {to} {t}"}),
                                           {{"to", to}, {"t", text}});
         return c;
       }},
      {"track_order(order_id)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string id = order_id(r);
         c.args["order_id"] = id;
         c.request = fill(pick_l(r, l, {"where is package {o}?", "track my order {o}", "status of order {o}"},
                                 {"查一下订单{o}", "{o}这个快递到哪了", "我的订单{o}物流"}),
                          {{"o", id}});
         return c;
       }},
      {"search_products(query, max_price?)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string item = draw_open(r, open)
                                      ? open_item(r, l)
                                      : pick_l(r, l, {"wireless earbuds", "running shoes", "a yoga mat", "a desk lamp",
                                                      "a rice cooker", "a winter coat"},
                                               {"无线耳机", "跑鞋", "瑜伽垫", "台灯", "电饭煲", "羽绒服"});
         const bool has_price = r.chance(0.5);
         const int price = r.range(2, 60) * 10;
         c.args["query"] = item;
         if (has_price) c.args["max_price"] = price;
         const std::string p = std::to_string(price);
         if (l == Lang::kZh) {
           c.request = has_price ? fill(r.pick(std::vector<std::string>{"找{p}元以内的{i}", "帮我找{i}，不超过{p}块"}),
                                        {{"i", item}, {"p", p}})
                                 : "搜一下" + item;
         } else {
           c.request = has_price ? fill(r.pick(std::vector<std::string>{"find {i} under {p} dollars",
                                                                       "look for {i} below ${p}"}),
                                        {{"i", item}, {"p", p}})
                                 : "search for " + item;
         }
         return c;
       }},
      {"convert_currency(amount, from, to)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         static const std::vector<Bi> cur = {{"USD", "美元"}, {"EUR", "欧元"}, {"CNY", "人民币"}, {"JPY", "日元"},
                                             {"GBP", "英镑"}};
         Call c;
         const int a = r.range(0, 4), b = (a + r.range(1, 4)) % 5;
         const int amount = r.range(1, 200) * (r.chance(0.5) ? 10 : 1);
         c.args["amount"] = amount;
         c.args["from"] = cur[static_cast<size_t>(a)].en;
         c.args["to"] = cur[static_cast<size_t>(b)].en;
         const std::vector<std::pair<std::string, std::string>> slots = {
             {"n", std::to_string(amount)}, {"f", cur[static_cast<size_t>(a)].in(l)}, {"t", cur[static_cast<size_t>(b)].in(l)}};
         c.request = fill(pick_l(r, l, {"how much is {n} {f} in {t}?", "convert {n} {f} to {t}"},
                                 {"{n}{f}是多少{t}？", "把{n}{f}换成{t}"}),
                          slots);
         return c;
       }},
      {"create_event(title, day, time)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string title = pick_l(r, l, {"team meeting", "dentist", "yoga class", "project review", "dinner with Mom"},
                                          {"团队会议", "看牙医", "瑜伽课", "项目评审", "和妈妈吃晚饭"});
         const std::string day = r.pick(weekdays()).in(l), time = clock_time(r, l);
         c.args["title"] = title;
         c.args["day"] = day;
         c.args["time"] = time;
         c.request = fill(pick_l(r, l, {"add {a} to my calendar on {d} at {t}", "schedule {a} for {d} at {t}"},
                                 {"{d}{t}加一个日程：{a}", "帮我在日历上加{d}{t}的{a}"}),
                          {{"a", title}, {"d", day}, {"t", time}});
         return c;
       }},
      {"translate(text, target)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string text = pick_l(r, l, {"good morning", "thank you very much", "where is the station", "how much is this"},
                                         {"早上好", "非常感谢", "车站在哪里", "这个多少钱"});
         const std::string target = pick_l(r, l, {"French", "Japanese", "German", "Spanish", "Chinese"},
                                           {"法语", "日语", "德语", "西班牙语", "英语"});
         c.args["text"] = text;
         c.args["target"] = target;
         c.request = fill(pick_l(r, l, {"translate '{x}' into {y}", "how do you say {x} in {y}?"},
                                 {"把“{x}”翻译成{y}", "{x}用{y}怎么说"}),
                          {{"x", text}, {"y", target}});
         return c;
       }},
      {"call_contact(name)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string name = draw_open(r, open) ? open_person(r, l) : r.pick(person_names()).in(l);
         c.args["name"] = name;
         c.request = fill(pick_l(r, l, {"call {n}", "phone {n} please", "ring {n}"}, {"给{n}打电话", "打给{n}", "呼叫{n}"}),
                          {{"n", name}});
         return c;
       }},
      {"book_taxi(destination, time?)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string dest = draw_open(r, open)
                                      ? open_place(r, l)
                                      : pick_l(r, l, {"the airport", "the train station", "the office", "Central Park"},
                                               {"机场", "火车站", "公司", "人民广场"});
         const bool has_time = r.chance(0.5);
         const std::string time = clock_time(r, l);
         c.args["destination"] = dest;
         if (has_time) c.args["time"] = time;
         if (l == Lang::kZh) {
           c.request = "叫一辆车去" + dest + (has_time ? "，" + time + "出发" : "");
         } else {
           c.request = r.pick(std::vector<std::string>{"get me a taxi to ", "book a cab to "}) + dest +
                       (has_time ? " at " + time : "");
         }
         return c;
       }},
      {"set_reminder(text, time)",
       [](Rng& r, Lang l, [[maybe_unused]] double open) {
         Call c;
         const std::string task = pick_l(r, l, {"take my medicine", "call the bank", "buy milk", "water the plants"},
                                         {"吃药", "给银行打电话", "买牛奶", "浇花"});
         const std::string time = clock_time(r, l);
         c.args["text"] = task;
         c.args["time"] = time;
         c.request = l == Lang::kZh ? time + "提醒我" + task : "remind me to " + task + " at " + time;
         return c;
       }},
  };
  return k;
}

}  // namespace

TaskExample gen_tool(Rng& r, Lang l, double open_values) {
  const auto& all = tools();
  const int n = static_cast<int>(all.size());
  const int n_shown = r.range(3, 4);
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  r.shuffle(order);
  std::vector<int> shown(order.begin(), order.begin() + n_shown);
  const bool none = r.chance(0.1);
  const int target = none ? order[static_cast<size_t>(n_shown)] : shown[static_cast<size_t>(r.below(n_shown))];
  const Call call = all[static_cast<size_t>(target)].make(r, l, open_values);

  std::string prompt = l == Lang::kZh ? "调用工具（JSON）：\n" : "Call a tool (JSON):\n";
  for (int i : shown) prompt += std::string("- ") + all[static_cast<size_t>(i)].signature + "\n";
  prompt += (l == Lang::kZh ? "请求：" : "Request: ") + call.request;
  nlohmann::ordered_json j;
  if (none) {
    j["tool"] = "none";
    j["args"] = nlohmann::ordered_json::object();
  } else {
    const std::string sig = all[static_cast<size_t>(target)].signature;
    j["tool"] = sig.substr(0, sig.find('('));
    j["args"] = call.args;
  }
  TaskExample e;
  e.task = TaskKind::kTool;
  e.lang = l;
  e.prompt = prompt;
  e.answer = j.dump();
  return e;
}

}  // namespace pocket::train::taskgen
