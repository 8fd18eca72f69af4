// The extraction task: a noisy product description -> compact JSON of the attributes it states. Keys (fixed
// order): name, brand, price, colour, size, material; an attribute the description does not state is left
// out (never null). price is a JSON number; the other values are copied verbatim from the description.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "data/task_gen.h"

namespace pocket::train::taskgen {
namespace {

enum Category { kClothing, kShoes, kBags, kHome, kBedding, kNumCategories };

struct Lexicon {
  std::vector<Bi> products, materials, sizes;
};

const Lexicon& lexicon(Category c) {
  static const Lexicon k[kNumCategories] = {
      {{{"t-shirt", "T恤"}, {"hoodie", "连帽卫衣"}, {"jacket", "夹克"}, {"dress", "连衣裙"}, {"jeans", "牛仔裤"},
        {"sweater", "毛衣"}, {"shirt", "衬衫"}, {"coat", "大衣"}, {"skirt", "半身裙"}, {"shorts", "短裤"},
        {"polo shirt", "POLO衫"}, {"cardigan", "开衫"}},
       {{"cotton", "纯棉"}, {"linen", "亚麻"}, {"wool", "羊毛"}, {"polyester", "涤纶"}, {"silk", "真丝"},
        {"denim", "牛仔布"}, {"cashmere", "羊绒"}, {"fleece", "摇粒绒"}},
       {{"S", "S"}, {"M", "M"}, {"L", "L"}, {"XL", "XL"}, {"XXL", "XXL"}, {"XS", "XS"}}},
      {{{"running shoes", "跑鞋"}, {"sneakers", "运动鞋"}, {"boots", "靴子"}, {"sandals", "凉鞋"},
        {"loafers", "乐福鞋"}, {"slippers", "拖鞋"}, {"hiking shoes", "登山鞋"}},
       {{"leather", "真皮"}, {"suede", "麂皮"}, {"canvas", "帆布"}, {"mesh", "网面"}, {"rubber", "橡胶"}},
       {{"EU 36", "36码"}, {"EU 37", "37码"}, {"EU 38", "38码"}, {"EU 39", "39码"}, {"EU 40", "40码"},
        {"EU 41", "41码"}, {"EU 42", "42码"}, {"EU 43", "43码"}, {"EU 44", "44码"}, {"EU 45", "45码"}}},
      {{{"backpack", "双肩包"}, {"tote bag", "托特包"}, {"wallet", "钱包"}, {"suitcase", "行李箱"},
        {"crossbody bag", "斜挎包"}, {"laptop bag", "电脑包"}},
       {{"leather", "真皮"}, {"canvas", "帆布"}, {"nylon", "尼龙"}, {"PU leather", "PU皮"}, {"polyester", "涤纶"}},
       {{"small", "小号"}, {"medium", "中号"}, {"large", "大号"}, {"20 inch", "20寸"}, {"24 inch", "24寸"},
        {"15.6 inch", "15.6寸"}}},
      {{{"water bottle", "水杯"}, {"mug", "马克杯"}, {"lunch box", "饭盒"}, {"thermos", "保温杯"},
        {"kettle", "电水壶"}, {"teapot", "茶壶"}},
       {{"stainless steel", "不锈钢"}, {"glass", "玻璃"}, {"ceramic", "陶瓷"}, {"bamboo", "竹制"},
        {"BPA-free plastic", "食品级塑料"}},
       {{"350 ml", "350毫升"}, {"500 ml", "500毫升"}, {"750 ml", "750毫升"}, {"1 L", "1升"}, {"1.5 L", "1.5升"}}},
      {{{"duvet cover", "被套"}, {"pillow", "枕头"}, {"blanket", "毛毯"}, {"bed sheet", "床单"},
        {"mattress topper", "床垫"}},
       {{"cotton", "纯棉"}, {"linen", "亚麻"}, {"silk", "真丝"}, {"bamboo fibre", "竹纤维"}, {"memory foam", "记忆棉"}},
       {{"single", "单人"}, {"double", "双人"}, {"queen", "1.5米"}, {"king", "1.8米"}, {"super king", "2米"}}},
  };
  return k[c];
}

const std::vector<std::string>& brands(Lang l) {
  static const std::vector<std::string> en = {"Nordik", "Lumen",    "Arcadia", "Velora", "Kestrel", "Bramble",
                                              "Solace", "Tundra",   "Mistral", "Ferro",  "Pinecrest", "Halden",
                                              "Zephyr", "Corvo",    "Bluefin", "Avalon", "Quill",  "Riva",
                                              "Onyx",   "Maple & Co", "Urbano", "Kiri"};
  static const std::vector<std::string> zh = {"北极狐", "云朵", "南山",   "青禾", "木子", "小熊",   "星河",
                                              "海纳",   "拾光", "初见",   "暖阳", "鹿角", "简约家", "山野",
                                              "花间",   "橙子", "Nordik", "Lumen", "Kiri", "Zephyr"};
  return l == Lang::kZh ? zh : en;
}

// Price in cents -> its text: "299", "59.99", and "59.50" (two decimals, English shops) or "59.5" (shortest,
// as Chinese shops and the JSON number print it).
std::string price_text(int64_t cents, bool two_decimals) {
  if (cents % 100 == 0) return std::to_string(cents / 100);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%02lld", static_cast<long long>(cents / 100), static_cast<long long>(cents % 100));
  std::string s = buf;
  if (!two_decimals && s.back() == '0') s.pop_back();
  return s;
}

int64_t draw_price_cents(Rng& r, Lang l) {
  if (l == Lang::kZh) {
    const int64_t yuan = r.pick(std::vector<int64_t>{19, 29, 39, 49, 59, 69, 79, 89, 99, 129, 159, 199, 249, 299,
                                                      349, 399, 459, 599, 799, 999, 1299}) +
                         (r.chance(0.3) ? r.range(-9, 9) : 0);
    return yuan * 100 + (r.chance(0.15) ? 90 : 0);
  }
  const int64_t dollars = r.range(4, 260);
  return dollars * 100 + r.pick(std::vector<int64_t>{0, 99, 99, 50, 95, 49});
}

struct Fields {
  std::string name, brand, colour, size, material, price;  // empty: not stated
  int64_t price_cents = -1;
};

std::string describe_en(Rng& r, const Fields& f, int64_t old_cents) {
  std::string head = f.name;
  bool brand_done = false, colour_done = false, material_done = false;
  if (!f.material.empty() && r.chance(0.4)) head = f.material + " " + head, material_done = true;
  if (!f.colour.empty() && r.chance(0.5)) head = f.colour + " " + head, colour_done = true;
  if (!f.brand.empty() && r.chance(0.6)) {
    head = r.chance(0.7) ? f.brand + " " + head : head + " by " + f.brand;
    brand_done = true;
  }
  std::vector<std::string> clauses;
  if (!f.brand.empty() && !brand_done) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"Brand: {v}", "by {v}", "made by {v}", "brand {v}"}),
                           {{"v", f.brand}}));
  }
  if (!f.colour.empty() && !colour_done) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"Colour: {v}", "color {v}", "in {v}", "available in {v}",
                                                           "colour - {v}"}),
                           {{"v", f.colour}}));
  }
  if (!f.material.empty() && !material_done) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"Material: {v}", "made of {v}", "100% {v}",
                                                           "{v} build", "material {v}"}),
                           {{"v", f.material}}));
  }
  if (!f.size.empty()) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"Size {v}", "size: {v}", "Size - {v}", "sz {v}"}),
                           {{"v", f.size}}));
  }
  if (!f.price.empty()) {
    std::string p = r.pick(std::vector<std::string>{"${v}", "Price: ${v}", "now {v} USD", "only ${v}", "USD {v}",
                                                    "${v} each"});
    if (old_cents > 0) p = "was $" + price_text(old_cents, true) + ", now $" + f.price;
    clauses.push_back(fill(p, {{"v", f.price}}));
  }
  r.shuffle(clauses);
  const std::string sep = r.pick(std::vector<std::string>{", ", ". ", " | ", " - ", "; ", ", "});
  std::string s = r.pick(std::vector<std::string>{"", "", "", "New arrival: ", "Hot sale! ", "Limited edition: ",
                                                  "[Free shipping] ", "SALE - "}) + head;
  for (const auto& c : clauses) s += sep + c;
  std::string tail = r.pick(std::vector<std::string>{"", "", "", " Free returns within 30 days.", " Ships in 2 days.",
                                       " 4.8 stars from 1,203 reviews.", " Machine washable.", " Limited stock!",
                                       " Gift box included.", " 2-year warranty."});
  if (sep == ". " || !tail.empty() || r.chance(0.5)) s += ".";
  return s + tail;
}

std::string describe_zh(Rng& r, const Fields& f, int64_t old_cents) {
  std::string head = f.name;
  bool brand_done = false, colour_done = false, material_done = false;
  if (!f.material.empty() && r.chance(0.45)) head = f.material + head, material_done = true;
  if (!f.colour.empty() && r.chance(0.5)) head = f.colour + head, colour_done = true;
  if (!f.brand.empty() && r.chance(0.6)) {
    head = r.chance(0.5) ? "【" + f.brand + "】" + head : f.brand + (r.chance(0.5) ? " " : "") + head;
    brand_done = true;
  }
  std::vector<std::string> clauses;
  if (!f.brand.empty() && !brand_done) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"品牌：{v}", "{v}出品", "品牌{v}"}), {{"v", f.brand}}));
  }
  if (!f.colour.empty() && !colour_done) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"颜色：{v}", "{v}款", "颜色{v}", "主色{v}"}),
                           {{"v", f.colour}}));
  }
  if (!f.material.empty() && !material_done) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"材质：{v}", "{v}材质", "面料{v}", "采用{v}"}),
                           {{"v", f.material}}));
  }
  if (!f.size.empty()) {
    clauses.push_back(fill(r.pick(std::vector<std::string>{"尺码：{v}", "{v}", "规格{v}", "尺寸：{v}"}),
                           {{"v", f.size}}));
  }
  if (!f.price.empty()) {
    std::string p = r.pick(std::vector<std::string>{"¥{v}", "售价{v}元", "到手价{v}元", "￥{v}", "{v}元",
                                                    "价格：{v}元"});
    if (old_cents > 0) p = "原价" + price_text(old_cents, false) + "元，现价" + f.price + "元";
    clauses.push_back(fill(p, {{"v", f.price}}));
  }
  r.shuffle(clauses);
  const std::string sep = r.pick(std::vector<std::string>{"，", "，", "；", " | ", " ", "。"});
  std::string s = r.pick(std::vector<std::string>{"", "", "", "新品上市！", "【包邮】", "限时特价：", "爆款推荐 "}) +
                  head;
  for (const auto& c : clauses) s += sep + c;
  std::string tail = r.pick(std::vector<std::string>{"", "", "", "七天无理由退换。", "现货速发。", "好评率98%。", "可机洗。",
                                       "送礼盒。", "质保两年。"});
  if (!tail.empty() || r.chance(0.6)) s += "。";
  return s + tail;
}

}  // namespace

std::string open_brand(Rng& r, Lang l) {
  if (l == Lang::kZh) {
    static const std::vector<std::string> chars = {
        "飞", "跃", "素", "锦", "云", "岚", "木", "森", "禾", "田", "青", "竹", "墨", "白", "川", "溪", "石", "峰",
        "星", "辰", "月", "光", "雅", "逸", "悦", "然", "安", "宁", "朗", "晴", "悠", "乐", "优", "品", "尚", "美",
        "华", "盛", "恒", "泰", "嘉", "和", "福", "瑞", "祥", "雪", "松", "柏", "兰", "菊", "梅", "桃", "橙", "柚",
        "麦", "稻", "风", "野", "原", "林", "江", "湖", "海", "岛", "晨", "暮", "夏", "秋", "冬", "春", "鹿", "鹤",
        "燕", "鲸", "猫", "狐", "熊", "兔", "象", "蓝", "绿", "金", "银", "铁", "匠", "坊", "记", "家", "居", "物"};
    std::string b = r.pick(chars) + r.pick(chars);
    if (r.chance(0.25)) b += r.pick(chars);
    return b;
  }
  if (r.chance(0.3)) {
    static const std::vector<std::string> first = {"Trail", "Stone", "River", "Cloud", "Oak",  "Iron", "Blue",
                                                   "North", "Wild",  "Sun",   "Pine",  "Red",  "Silver", "Fox",
                                                   "Bear",  "Ever",  "Moon",  "Cedar", "High", "Harbor"};
    static const std::vector<std::string> second = {"head", "field", "line", "craft", "works", "wood", "peak",
                                                    "side", "stone", "gate", "ridge", "port", "brook", "mark"};
    return r.pick(first) + r.pick(second);
  }
  static const std::vector<std::string> onset = {"B", "Br", "C", "D", "F", "G", "H", "K", "L", "M", "N", "P",
                                                 "R", "S", "St", "T", "Tr", "V", "W", "Z", "Qu", "El", "Or", "Al"};
  static const std::vector<std::string> vowel = {"a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"};
  static const std::vector<std::string> mid = {"n", "r", "l", "v", "m", "s", "d", "th", "k", "x", "nd", "rv"};
  static const std::vector<std::string> end = {"a", "o", "e", "is", "an", "en", "ix", "or", "um", "ia", "el", "ane"};
  std::string b = r.pick(onset) + r.pick(vowel) + r.pick(mid) + r.pick(end);
  if (r.chance(0.2)) b += r.pick(std::vector<std::string>{" & Co", " Labs", " Studio", " Goods"});
  return b;
}

std::string open_colour(Rng& r, Lang l) {
  if (l == Lang::kZh) {
    static const std::vector<std::string> mod = {"深", "浅", "墨", "雾霾", "奶", "冰", "烟", "亮", "暗", "藏",
                                                 "湖", "橄榄", "焦糖", "酒", "玫瑰", "杏", "米", "天", "宝石",
                                                 "薄荷", "珊瑚", "燕麦", "卡其", "象牙", "香槟", "孔雀", "灰"};
    static const std::vector<std::string> base = {"绿", "蓝", "灰", "红", "粉", "紫", "黄", "棕", "白", "黑", "青", "橙"};
    return r.pick(mod) + r.pick(base) + (r.chance(0.7) ? "色" : "");
  }
  static const std::vector<std::string> mod = {"navy", "dark", "light", "pale", "dusty", "deep", "bright", "forest",
                                               "sky", "olive", "charcoal", "sage", "mint", "burnt", "ice", "rose",
                                               "sand", "steel", "midnight", "ocean", "moss", "stone"};
  static const std::vector<std::string> base = {"blue", "green", "grey", "red", "pink", "purple", "yellow", "brown",
                                                "white", "black", "orange", "beige", "teal"};
  return r.pick(mod) + " " + r.pick(base);
}

std::string open_name(Rng& r, Lang l, const std::string& product) {
  if (l == Lang::kZh) {
    static const std::vector<std::string> mod = {"防水", "轻便", "加厚", "便携", "复古", "简约", "大容量", "透气",
                                                 "保暖", "折叠", "儿童", "商务", "户外", "迷你", "加大"};
    return r.pick(mod) + product;
  }
  static const std::vector<std::string> mod = {"waterproof", "lightweight", "vintage", "classic", "compact", "travel",
                                               "insulated", "foldable", "slim", "oversized", "kids'", "outdoor"};
  return r.pick(mod) + " " + product;
}

TaskExample gen_extract(Rng& r, Lang l, double open_values) {
  const Lexicon& lex = lexicon(static_cast<Category>(r.below(kNumCategories)));
  // Each open draw happens only when open_values > 0, so the lexicon-only stream is the old one.
  auto open = [&] { return open_values > 0 && r.chance(open_values); };
  Fields f;
  f.name = r.pick(lex.products).in(l);
  if (open()) f.name = open_name(r, l, f.name);
  if (r.chance(0.85)) f.brand = open() ? open_brand(r, l) : r.pick(brands(l));
  if (r.chance(0.85)) {
    f.price_cents = draw_price_cents(r, l);
    f.price = price_text(f.price_cents, l == Lang::kEn);
  }
  if (r.chance(0.75)) f.colour = open() ? open_colour(r, l) : r.pick(colours()).in(l);
  if (r.chance(0.7)) f.size = r.pick(lex.sizes).in(l);
  if (r.chance(0.7)) f.material = r.pick(lex.materials).in(l);
  const int64_t old_cents = f.price_cents > 0 && r.chance(0.15) ? f.price_cents + 100 * r.range(5, 60) : 0;

  nlohmann::ordered_json j;
  j["name"] = f.name;
  if (!f.brand.empty()) j["brand"] = f.brand;
  if (f.price_cents >= 0) {
    if (f.price_cents % 100 == 0) j["price"] = f.price_cents / 100;
    else j["price"] = static_cast<double>(f.price_cents) / 100.0;
  }
  if (!f.colour.empty()) j["colour"] = f.colour;
  if (!f.size.empty()) j["size"] = f.size;
  if (!f.material.empty()) j["material"] = f.material;

  TaskExample e;
  e.task = TaskKind::kExtract;
  e.lang = l;
  e.prompt = l == Lang::kZh ? "提取JSON：\n" + describe_zh(r, f, old_cents) : "Extract JSON:\n" + describe_en(r, f, old_cents);
  e.answer = j.dump();
  return e;
}

}  // namespace pocket::train::taskgen
