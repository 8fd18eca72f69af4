// The routing task: a short context and a question -> "local" when the context states the answer, "cloud"
// when answering needs world knowledge or long reasoning. Half the cloud questions name something in the
// context (its city, courier, product) so the model cannot route by topic alone.
#include "data/task_gen.h"

namespace pocket::train::taskgen {
namespace {

struct Context {
  std::vector<std::string> facts;       // sentences, shuffled into the context
  std::vector<std::string> local_qs;    // answered by a fact
  std::vector<std::string> related_qs;  // about an entity in the context, answered by none of its facts
};

Context order_context(Rng& r, Lang l) {
  const std::string o = order_id(r), city = r.pick(cities()).in(l), day = r.pick(weekdays()).in(l);
  const std::string item = r.pick(std::vector<Bi>{{"blender", "破壁机"}, {"laptop bag", "电脑包"}, {"air fryer", "空气炸锅"},
                                                  {"desk lamp", "台灯"}, {"rice cooker", "电饭煲"}}).in(l);
  const std::string carrier = r.pick(std::vector<Bi>{{"SF Express", "顺丰"}, {"DHL", "DHL"}, {"FedEx", "联邦快递"},
                                                     {"China Post", "中国邮政"}, {"JD Logistics", "京东物流"}}).in(l);
  const std::string fee = std::to_string(r.range(0, 25));
  const std::vector<std::pair<std::string, std::string>> s = {
      {"o", o}, {"city", city}, {"day", day}, {"item", item}, {"carrier", carrier}, {"fee", fee}};
  Context c;
  if (l == Lang::kZh) {
    c.facts = {fill("订单{o}（{item}）已由{carrier}从{city}发出。", s), fill("预计{day}送达。", s), fill("运费{fee}元。", s)};
    c.local_qs = {fill("订单{o}什么时候到？", s), fill("我的{item}是哪家快递送的？", s), fill("订单{o}从哪里发货的？", s),
                  "运费是多少？", fill("{item}预计哪天送到？", s)};
    c.related_qs = {fill("{city}有哪些好玩的景点？", s), fill("{carrier}和其他快递公司相比怎么样？", s),
                    fill("{item}的工作原理是什么？", s), fill("{city}的人口有多少？", s)};
  } else {
    c.facts = {fill("Order {o} ({item}) was shipped from {city} by {carrier}.", s),
               fill("It is expected to arrive on {day}.", s), fill("Delivery fee: {fee} dollars.", s)};
    c.local_qs = {fill("When will order {o} arrive?", s), fill("Which courier is delivering my {item}?", s),
                  fill("Where was order {o} shipped from?", s), "How much was the delivery fee?",
                  fill("What day should the {item} arrive?", s)};
    c.related_qs = {fill("What are the best sights to see in {city}?", s), fill("Is {carrier} more reliable than other couriers?", s),
                    fill("How does a {item} work?", s), fill("What is the population of {city}?", s)};
  }
  return c;
}

Context store_context(Rng& r, Lang l) {
  const std::string city = r.pick(cities()).in(l), open = std::to_string(r.range(7, 10)),
                    close = std::to_string(r.range(6, 10)), ph = phone(r);
  const std::string brand = r.pick(std::vector<std::string>{"Nordik", "Lumen", "Kiri", "Avalon", "Zephyr"});
  const std::vector<std::pair<std::string, std::string>> s = {
      {"city", city}, {"open", open}, {"close", close}, {"ph", ph}, {"brand", brand}};
  Context c;
  if (l == Lang::kZh) {
    c.facts = {fill("{brand}{city}店每天上午{open}点开门，晚上{close}点关门。", s), fill("门店电话：{ph}。", s),
               "店内支持以旧换新。"};
    c.local_qs = {"门店几点关门？", "门店电话是多少？", fill("{city}店几点开门？", s), "店里能以旧换新吗？"};
    c.related_qs = {fill("{brand}这个品牌是哪一年创立的？", s), fill("{city}冬天冷不冷？", s), fill("去{city}旅游需要准备什么？", s)};
  } else {
    c.facts = {fill("The {brand} store in {city} opens at {open} am and closes at {close} pm every day.", s),
               fill("Phone: {ph}.", s), "Trade-ins are accepted in store."};
    c.local_qs = {"What time does the store close?", "What is the store's phone number?",
                  fill("When does the {city} store open?", s), "Can I trade in my old device at the store?"};
    c.related_qs = {fill("When was the {brand} company founded?", s), fill("How cold does {city} get in winter?", s),
                    fill("What should I pack for a trip to {city}?", s)};
  }
  return c;
}

Context meeting_context(Rng& r, Lang l) {
  const std::string name = r.pick(person_names()).in(l), day = r.pick(weekdays()).in(l), time = clock_time(r, l),
                    room = std::to_string(r.range(101, 905));
  const std::string title = r.pick(std::vector<Bi>{{"budget review", "预算评审"}, {"team meeting", "团队会议"},
                                                   {"design workshop", "设计研讨会"}, {"client call", "客户电话会"}}).in(l);
  const std::vector<std::pair<std::string, std::string>> s = {
      {"name", name}, {"day", day}, {"time", time}, {"room", room}, {"title", title}};
  Context c;
  if (l == Lang::kZh) {
    c.facts = {fill("{name}把{title}安排在{day}{time}。", s), fill("地点是{room}会议室。", s), "请提前准备好材料。"};
    c.local_qs = {fill("{title}在哪个会议室？", s), fill("{title}什么时候开？", s), fill("谁安排的{title}？", s)};
    c.related_qs = {"怎样才能把会议开得更高效？请详细说明。", fill("帮我写一份{title}的完整方案。", s),
                    "远程办公对团队效率有什么影响？"};
  } else {
    c.facts = {fill("{name} scheduled the {title} for {day} at {time}.", s), fill("It takes place in room {room}.", s),
               "Please bring your notes."};
    c.local_qs = {fill("Which room is the {title} in?", s), fill("When is the {title}?", s), fill("Who scheduled the {title}?", s)};
    c.related_qs = {"How can I make meetings more productive? Explain in detail.", fill("Write a full agenda for a {title}.", s),
                    "How does remote work affect team productivity?"};
  }
  return c;
}

Context policy_context(Rng& r, Lang l) {
  const std::string days = std::to_string(r.pick(std::vector<int>{7, 14, 15, 30, 60})), work = std::to_string(r.range(3, 10));
  const std::vector<std::pair<std::string, std::string>> s = {{"days", days}, {"work", work}};
  Context c;
  if (l == Lang::kZh) {
    c.facts = {fill("商品签收后{days}天内可以退货。", s), fill("退款会在{work}个工作日内退回原支付账户。", s),
               "定制商品不支持退货。"};
    c.local_qs = {"收货后多少天内可以退货？", "退款要多久到账？", "退款退到哪里？", "定制商品能退吗？"};
    c.related_qs = {"各国的消费者保护法有什么不同？", "网购退货对环境有什么影响？", "信用卡退款的清算流程是怎样的？"};
  } else {
    c.facts = {fill("Items can be returned within {days} days of delivery.", s),
               fill("Refunds go back to the original payment method within {work} working days.", s),
               "Custom-made items cannot be returned."};
    c.local_qs = {"How many days do I have to return an item?", "How long does a refund take?",
                  "Where does my refund go?", "Can I return a custom-made item?"};
    c.related_qs = {"How do consumer protection laws differ between countries?",
                    "What is the environmental impact of online returns?", "How does card refund settlement work between banks?"};
  }
  return c;
}

Context product_context(Rng& r, Lang l) {
  const std::string item = r.pick(std::vector<Bi>{{"smart watch", "智能手表"}, {"power bank", "充电宝"},
                                                  {"wireless earbuds", "无线耳机"}, {"e-reader", "电子书阅读器"}}).in(l);
  const std::string grams = std::to_string(r.range(3, 40) * 10), hours = std::to_string(r.range(6, 72)),
                    years = std::to_string(r.range(1, 3));
  const std::vector<std::pair<std::string, std::string>> s = {{"item", item}, {"g", grams}, {"h", hours}, {"y", years}};
  Context c;
  if (l == Lang::kZh) {
    c.facts = {fill("这款{item}重{g}克。", s), fill("电池续航{h}小时。", s), fill("保修{y}年。", s)};
    c.local_qs = {"电池能用多久？", fill("{item}有多重？", s), "保修几年？"};
    c.related_qs = {"锂电池为什么会老化？", fill("{item}是怎么发明出来的？", s), "长期戴耳机对听力有什么影响？"};
  } else {
    c.facts = {fill("This {item} weighs {g} grams.", s), fill("Its battery lasts {h} hours.", s),
               fill("It comes with a {y}-year warranty.", s)};
    c.local_qs = {"How long does the battery last?", fill("How heavy is the {item}?", s), "How long is the warranty?"};
    c.related_qs = {"Why do lithium batteries wear out over time?", fill("Who invented the first {item}?", s),
                    "Does wearing earbuds every day damage hearing?"};
  }
  return c;
}

// General questions that need world knowledge or long reasoning, whatever the context.
const std::vector<std::string>& general_cloud(Lang l) {
  static const std::vector<std::string> en = {
      "What is the capital of Australia?", "Why is the sky blue?", "Who invented the telephone?",
      "Summarise the causes of the First World War.", "Is it better to rent or buy a home? Explain in detail.",
      "How do vaccines train the immune system?", "Write a cover letter for a marketing job.",
      "Prove that there are infinitely many prime numbers.", "Plan a five-day trip to Japan for a family of four.",
      "What are the health effects of drinking coffee every day?", "Explain how inflation affects interest rates.",
      "Write a short poem about autumn.", "What is the difference between a virus and a bacterium?",
      "Compare Python and Rust for writing web servers."};
  static const std::vector<std::string> zh = {
      "澳大利亚的首都是哪里？", "天空为什么是蓝色的？", "电话是谁发明的？", "总结一下第一次世界大战的起因。",
      "租房好还是买房好？请详细分析。", "疫苗是怎样训练免疫系统的？", "帮我写一封市场营销岗位的求职信。",
      "证明素数有无穷多个。", "为一家四口规划一次五天的日本旅行。", "每天喝咖啡对健康有什么影响？",
      "通货膨胀如何影响利率？", "写一首关于秋天的短诗。", "病毒和细菌有什么区别？", "比较一下Python和Rust写网络服务的优缺点。"};
  return l == Lang::kZh ? zh : en;
}

}  // namespace

TaskExample gen_route(Rng& r, Lang l) {
  Context c;
  switch (r.below(5)) {
    case 0: c = order_context(r, l); break;
    case 1: c = store_context(r, l); break;
    case 2: c = meeting_context(r, l); break;
    case 3: c = policy_context(r, l); break;
    default: c = product_context(r, l); break;
  }
  const bool local = r.chance(0.5);
  std::string q;
  if (local) q = r.pick(c.local_qs);
  else q = r.chance(0.5) ? r.pick(c.related_qs) : r.pick(general_cloud(l));
  // The first fact introduces the subject ("Order A123 ...") that the others refer to; the rest are shuffled.
  std::vector<std::string> rest(c.facts.begin() + 1, c.facts.end());
  r.shuffle(rest);
  rest.insert(rest.begin(), c.facts.front());
  c.facts = rest;
  std::string ctx;
  for (const auto& f : c.facts) ctx += (ctx.empty() || l == Lang::kZh ? "" : " ") + f;
  TaskExample e;
  e.task = TaskKind::kRoute;
  e.lang = l;
  e.prompt = l == Lang::kZh ? "路由（local或cloud）：\n上下文：" + ctx + "\n问题：" + q
                            : "Route (local or cloud):\nContext: " + ctx + "\nQuestion: " + q;
  e.answer = local ? "local" : "cloud";
  return e;
}

}  // namespace pocket::train::taskgen
