// Redaction's detectors: check digits (ID card MOD 11-2, Luhn) on valid and invalid numbers, and the spans
// found in mixed Chinese/English text.
#include <gtest/gtest.h>

#include "task/redact_detectors.h"
#include "task/task.h"

namespace pocket {
namespace {

// An 18-character ID with its check character computed independently of valid_id_card (ISO 7064 MOD 11-2
// written as the standard defines it: the remainder of sum(a_i * 2^(17 - i)) mod 11 picks "10X98765432").
std::string with_check(const std::string& first17) {
  int sum = 0;
  for (int i = 0; i < 17; ++i) sum += (first17[i] - '0') * ((1 << (17 - i)) % 11);
  return first17 + "10X98765432"[sum % 11];
}

TEST(RedactDetectors, IdCardCheckDigit) {
  const std::string good = with_check("11010519491231002");
  EXPECT_EQ(good, "11010519491231002X");  // the standard's published example
  EXPECT_TRUE(valid_id_card(good));
  EXPECT_TRUE(valid_id_card("11010519491231002x"));
  for (char c : std::string("0123456789")) {
    EXPECT_FALSE(valid_id_card(good.substr(0, 17) + c)) << c;
  }
  const std::string other = with_check("44030419900307123");
  EXPECT_TRUE(valid_id_card(other));
  // One digit changed: the check fails.
  std::string bad = other;
  bad[5] = bad[5] == '9' ? '8' : static_cast<char>(bad[5] + 1);
  EXPECT_FALSE(valid_id_card(bad));
  // A right check digit on an impossible birth date (month 13, 30 February, 29 February 1990).
  EXPECT_FALSE(valid_id_card(with_check("44030419901307123")));
  EXPECT_FALSE(valid_id_card(with_check("44030419900230123")));
  EXPECT_FALSE(valid_id_card(with_check("44030419900229123")));
  EXPECT_TRUE(valid_id_card(with_check("44030420000229123")));  // 2000 is a leap year
  EXPECT_FALSE(valid_id_card("1101051949123100"));              // too short
}

TEST(RedactDetectors, Luhn) {
  EXPECT_TRUE(luhn_valid("4111111111111111"));
  EXPECT_TRUE(luhn_valid("4111 1111 1111 1111"));
  EXPECT_TRUE(luhn_valid("6222021234567890128"));       // 19 digits
  EXPECT_TRUE(luhn_valid("6222-0212-3456-7890-128"));
  EXPECT_TRUE(luhn_valid("0000079927398713"));  // the standard's example 79927398713, padded to 16 digits
  EXPECT_FALSE(luhn_valid("4111111111111112"));
  EXPECT_FALSE(luhn_valid("411111111111"));         // 12 digits: too short for a card
  EXPECT_FALSE(luhn_valid("41111111111111111111"));  // 20 digits
  EXPECT_FALSE(luhn_valid("4111a11111111111"));
  // Every single-digit change of a valid number is caught.
  const std::string card = "5500005555555559";
  ASSERT_TRUE(luhn_valid(card));
  for (size_t i = 0; i < card.size(); ++i) {
    for (char c = '0'; c <= '9'; ++c) {
      if (c == card[i]) continue;
      std::string x = card;
      x[i] = c;
      EXPECT_FALSE(luhn_valid(x)) << x;
    }
  }
}

TEST(RedactDetectors, SpansInMixedText) {
  const std::string id = with_check("32010619850715241");
  const std::string text = "客户张伟，手机13812345678，身份证" + id + "，卡号 4111 1111 1111 1111，邮箱 zhang.wei@example.com。"
                           "Call +1 415-555-0100 or 010-62345678. Order 20231105 shipped.";
  auto spans = detect_sensitive(text);
  ASSERT_TRUE(spans) << spans.status().to_string();
  std::vector<std::pair<std::string, std::string>> got;
  for (const DetectedSpan& s : *spans) got.emplace_back(s.kind, text.substr(s.begin, s.end - s.begin));
  const std::vector<std::pair<std::string, std::string>> want = {
      {"phone", "13812345678"},      {"id_card", id},         {"bank_card", "4111 1111 1111 1111"},
      {"email", "zhang.wei@example.com"}, {"phone", "+1 415-555-0100"}, {"phone", "010-62345678"}};
  EXPECT_EQ(got, want);
}

TEST(RedactDetectors, InvalidNumbersAreLeftAlone) {
  // A wrong ID check digit, a card failing Luhn, a too-short number, an order id.
  const std::string text = "ID 110105194912310021, card 4111111111111112, code 123456, order R72138512.";
  auto spans = detect_sensitive(text);
  ASSERT_TRUE(spans);
  EXPECT_TRUE(spans->empty()) << text.substr((*spans)[0].begin, (*spans)[0].end - (*spans)[0].begin);
}

TEST(TaskRedact, ReplacesSpansAndKeepsTheRest) {
  auto r = task_redact(nullptr, "电话：13912345678，邮件a@b.cn", TaskOptions{});
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(r->text, "电话：[PHONE]，邮件[EMAIL]");
  ASSERT_EQ(r->spans.size(), 2u);
  EXPECT_EQ(r->spans[0].source, "detector");
  auto bad = task_redact(nullptr, std::string("abc\xff"), TaskOptions{});
  EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace pocket
