// The intent task: a short shopping / customer-service query -> one of 12 intent labels (intent_labels()),
// the label in English for both languages. Queries carry order numbers, products, cities, greetings,
// casual register and typos.
#include <cctype>

#include "data/task_gen.h"

namespace pocket::train::taskgen {
namespace {

struct IntentTemplates {
  const char* label;
  std::vector<std::string> en, zh;
};

// Slots: {order} order number, {item} product, {city} city, {n} a small number of days.
const std::vector<IntentTemplates>& templates() {
  static const std::vector<IntentTemplates> k = {
      {"order_status",
       {"where is my order {order}?", "can you check the status of order {order}", "has my {item} shipped yet?",
        "what's happening with my order {order}", "track order {order} please", "is order {order} on its way?",
        "I still can't see any update on my {item} order"},
       {"我的订单{order}到哪了？", "帮我查一下订单{order}的状态", "我买的{item}发货了吗？", "订单{order}现在什么情况",
        "查询物流，订单号{order}", "我的{item}怎么还没有物流信息", "订单{order}到哪一步了"}},
      {"refund",
       {"I want my money back for order {order}", "how do I get a refund for the {item}?",
        "when will my refund arrive?", "please refund order {order}", "I was charged but want a refund",
        "the refund for my {item} hasn't reached my card", "can I get a refund instead of store credit?"},
       {"我要退款，订单{order}", "{item}怎么申请退款？", "退款什么时候到账？", "请把订单{order}的钱退给我",
        "退款已经{n}天了还没到", "{item}不要了，能直接退款吗", "我想申请退款"}},
      {"return",
       {"how do I return the {item}?", "I want to send back order {order}", "can I return an item after {n} days?",
        "the {item} doesn't fit, I'd like to return it", "where do I ship my return to?",
        "do I need the original box to return the {item}?", "please arrange a return pickup for {order}"},
       {"{item}怎么退货？", "我想退货，订单号{order}", "买了{n}天还能退货吗？", "{item}尺码不合适，想退回去",
        "退货寄到哪个地址？", "退货需要原包装吗", "帮我安排上门取件退货，订单{order}"}},
      {"cancel_order",
       {"cancel my order {order}", "I ordered the {item} by mistake, please cancel it",
        "can I still cancel order {order}?", "please stop order {order} before it ships",
        "how do I cancel an order I just placed?", "I don't want the {item} anymore, cancel the order"},
       {"取消订单{order}", "{item}拍错了，帮我取消订单", "订单{order}还能取消吗？", "订单{order}先别发货，我要取消",
        "刚下的单怎么取消", "不想要{item}了，取消订单吧"}},
      {"change_address",
       {"I need to change the delivery address for order {order}", "can you ship order {order} to {city} instead?",
        "I moved to {city}, please update my shipping address", "wrong address on order {order}, can I fix it?",
        "please deliver the {item} to my office in {city}"},
       {"订单{order}的收货地址要改一下", "能把订单{order}改寄到{city}吗？", "我搬到{city}了，帮我改收货地址",
        "订单{order}地址填错了，怎么修改", "{item}请送到我{city}的公司"}},
      {"product_inquiry",
       {"is the {item} waterproof?", "does the {item} come in other colours?", "what size should I get for the {item}?",
        "is the {item} in stock?", "how long does the battery of the {item} last?",
        "what material is the {item} made of?", "does the {item} have a warranty?"},
       {"{item}防水吗？", "{item}有别的颜色吗？", "{item}我该选什么尺码", "{item}还有货吗？", "{item}的电池能用多久",
        "{item}是什么材质的", "{item}有保修吗？"}},
      {"price_match",
       {"I saw the {item} cheaper on another site, can you match the price?", "do you offer price matching?",
        "the {item} dropped in price a day after I bought it, can I get the difference?",
        "another shop sells the {item} for less, will you match it?"},
       {"别家的{item}更便宜，能保价吗？", "你们支持价格保护吗？", "{item}我刚买就降价了，能退差价吗？",
        "其他店{item}卖得更便宜，可以按那个价格吗"}},
      {"complaint",
       {"the {item} arrived broken and I'm very unhappy", "your courier was rude to me", "this is the worst service ever",
        "I want to file a complaint about order {order}", "the {item} is nothing like the photos, terrible",
        "I've been waiting {n} days and nobody answers me"},
       {"{item}收到就是坏的，太失望了", "快递员态度太差了", "你们的服务太差了", "我要投诉，订单{order}",
        "{item}和图片完全不一样，太坑了", "等了{n}天都没人理我，我要投诉"}},
      {"shipping_time",
       {"how long does delivery to {city} take?", "when will the {item} arrive if I order today?",
        "do you offer next-day delivery to {city}?", "how many days does shipping take?",
        "can I get the {item} before the weekend?"},
       {"发到{city}要几天？", "今天下单{item}什么时候能到？", "{city}能次日达吗？", "一般几天能收到货？",
        "{item}周末前能到吗？"}},
      {"payment_issue",
       {"my card was declined at checkout", "I was charged twice for order {order}", "the payment page keeps failing",
        "why can't I pay with my credit card?", "money left my account but the order {order} says unpaid"},
       {"付款时银行卡被拒了", "订单{order}扣了两次钱", "支付页面一直失败", "为什么不能用信用卡付款？",
        "钱扣了但订单{order}显示未付款"}},
      {"account_help",
       {"I forgot my password", "how do I change the email on my account?", "my account is locked",
        "I can't log in to my account", "how do I delete my account?", "the verification code never arrives"},
       {"我忘记密码了", "怎么修改账号绑定的邮箱？", "我的账号被锁了", "登录不上账号", "怎么注销账号？",
        "收不到验证码"}},
      {"invoice",
       {"can I get an invoice for order {order}?", "I need a VAT invoice for the {item}",
        "please send the receipt for order {order} to my email", "how do I download my invoice?",
        "the company name on my invoice is wrong"},
       {"订单{order}能开发票吗？", "{item}需要开增值税专用发票", "请把订单{order}的发票发到我邮箱",
        "发票在哪里下载？", "发票抬头写错了"}},
  };
  return k;
}

const std::vector<Bi>& items() {
  static const std::vector<Bi> k = {{"headphones", "耳机"}, {"jacket", "夹克"},   {"phone case", "手机壳"},
                                    {"sneakers", "运动鞋"}, {"blender", "破壁机"}, {"backpack", "双肩包"},
                                    {"smart watch", "智能手表"}, {"desk lamp", "台灯"}, {"kettle", "电水壶"},
                                    {"dress", "连衣裙"}, {"power bank", "充电宝"}, {"air fryer", "空气炸锅"}};
  return k;
}

// A random adjacent-letter swap in one word of four or more letters (English only).
std::string typo(Rng& r, std::string s) {
  for (int tries = 0; tries < 6; ++tries) {
    const size_t p = static_cast<size_t>(r.below(static_cast<int>(s.size())));
    if (p + 1 < s.size() && std::isalpha(static_cast<unsigned char>(s[p])) &&
        std::isalpha(static_cast<unsigned char>(s[p + 1])) && s[p] != s[p + 1]) {
      std::swap(s[p], s[p + 1]);
      return s;
    }
  }
  return s;
}

}  // namespace

TaskExample gen_intent(Rng& r, Lang l) {
  const auto& all = templates();
  const IntentTemplates& t = all[static_cast<size_t>(r.below(static_cast<int>(all.size())))];
  std::string q = fill(r.pick(l == Lang::kZh ? t.zh : t.en), {{"order", order_id(r)},
                                                             {"item", r.pick(items()).in(l)},
                                                             {"city", r.pick(cities()).in(l)},
                                                             {"n", std::to_string(r.range(2, 20))}});
  if (l == Lang::kEn) {
    if (r.chance(0.5)) q[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(q[0])));
    if (r.chance(0.25)) q = typo(r, q);
    if (r.chance(0.2) && (q.back() == '?' || q.back() == '.')) q.pop_back();
    q = r.pick(std::vector<std::string>{"", "", "", "", "hi, ", "Hello! ", "hey ", "Hi there, ", "excuse me, "}) + q +
        r.pick(std::vector<std::string>{"", "", "", "", " thanks", " thank you!", " asap", " pls", "!!"});
  } else {
    if (r.chance(0.2) && (q.substr(q.size() - 3) == "？")) q.resize(q.size() - 3);
    q = r.pick(std::vector<std::string>{"", "", "", "", "你好，", "亲，", "在吗？", "客服，", "您好，"}) + q +
        r.pick(std::vector<std::string>{"", "", "", "", "，谢谢", "，急！", "，麻烦了", "～", "！！"});
  }
  TaskExample e;
  e.task = TaskKind::kIntent;
  e.lang = l;
  e.prompt = (l == Lang::kZh ? "判断意图：" : "Classify intent: ") + q;
  e.answer = t.label;
  return e;
}

}  // namespace pocket::train::taskgen
