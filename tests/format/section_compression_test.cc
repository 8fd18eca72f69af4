// zstd-compressed sections (flag ZSTD, format/section_compression.h): codec and package round trips, what
// the writer chooses to compress, and the reader against bad compressed sections (RELIABILITY.md 1, 3, 10):
// absurd or inconsistent decoded sizes refused before allocating, truncated, damaged and trailing zstd
// data, forbidden flag combinations. Every error names the section and the file.
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "allocation_probe.h"
#include "format/package.h"
#include "format/package_writer.h"
#include "format/section_compression.h"
#include "package_builder.h"
#include "test_util.h"

namespace pocket {
namespace {

using testing::AllocationProbe;
using testing::get_u64;
using testing::kFlatMemory;
using testing::PackageBuilder;
using testing::PackageImage;
using testing::put_u32;
using testing::put_u64;
using testing::reseal;

constexpr char kName[] = "z.pocket";
constexpr uint32_t kTokenizerIndex = 2;  // table index of the tokenizer in the builder's layout

Expected<Package> parse(std::span<const uint8_t> bytes) { return Package::from_bytes(bytes, kName, {true}); }

// An error with `code` whose message contains each of `parts` and the file's name.
::testing::AssertionResult fails_with(const Expected<Package>& r, ErrorCode code, std::vector<std::string> parts) {
  if (r.has_value()) return ::testing::AssertionFailure() << "opened, expected " << error_code_name(code);
  if (r.status().code() != code) {
    return ::testing::AssertionFailure() << "code " << error_code_name(r.status().code()) << ", expected "
                                         << error_code_name(code) << ": " << r.status().message();
  }
  parts.push_back(kName);
  for (const auto& p : parts) {
    if (r.status().message().find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks '" << p << "': " << r.status().message();
    }
  }
  return ::testing::AssertionSuccess();
}

// Compressible bytes, like a vocabulary: "[tok0][tok1]..." up to `n` bytes.
std::vector<uint8_t> vocab_like(size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) s += "[tok" + std::to_string(i) + "]";
  s.resize(n);
  return {s.begin(), s.end()};
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) {
    seed = seed * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(seed >> 24);
  }
  return v;
}

std::vector<uint8_t> encode(std::span<const uint8_t> content) {
  auto e = encode_zstd_section(content, kDefaultZstdLevel);
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return e.has_value() ? *e : std::vector<uint8_t>();
}

// A valid builder package whose tokenizer section stores exactly `stored`, flagged ZSTD.
std::vector<uint8_t> with_stored_tokenizer(std::vector<uint8_t> stored, uint32_t flags = kSectionZstd) {
  PackageBuilder b;
  b.tokenizer = std::move(stored);
  auto bytes = b.build().bytes;
  put_u32(bytes, testing::entry_pos(kTokenizerIndex) + testing::kEntryFlags, flags);
  reseal(bytes);
  return bytes;
}

const std::string kTok = "section 2 (tokenizer)";

// ---- The codec ----------------------------------------------------------------------------------------

TEST(SectionCompression, CodecRoundTrips) {
  const std::vector<std::vector<uint8_t>> contents = {
      {}, {42}, vocab_like(100), vocab_like(300000), random_bytes(70000, 7), std::vector<uint8_t>(3 << 20, 0)};
  for (const auto& c : contents) {
    for (int level : {1, kDefaultZstdLevel}) {
      SCOPED_TRACE(std::to_string(c.size()) + " bytes at level " + std::to_string(level));
      auto stored = encode_zstd_section(c, level);
      ASSERT_TRUE(stored.has_value()) << stored.status().to_string();
      ASSERT_GE(stored->size(), 12u);
      EXPECT_EQ(get_u64(*stored, 0), c.size());  // the size prefix
      EXPECT_EQ(testing::get_u32(*stored, 8), ZSTD_MAGICNUMBER);
      auto back = decode_zstd_section(*stored, "section 9 (test)", kName);
      ASSERT_TRUE(back.has_value()) << back.status().to_string();
      ASSERT_EQ(back->size(), c.size());
      EXPECT_TRUE(std::equal(c.begin(), c.end(), back->bytes().begin()));
    }
  }
  EXPECT_LT(encode(vocab_like(300000)).size(), 300000u / 4);
}

TEST(SectionCompression, EncoderRefusesBadLevels) {
  const auto c = vocab_like(10);
  for (int level : {0, -1, max_zstd_level() + 1}) {
    EXPECT_EQ(encode_zstd_section(c, level).status().code(), ErrorCode::kInvalidArgument) << level;
  }
}

// ---- Package round trips ------------------------------------------------------------------------------

TEST(SectionCompression, WriterCompressesSectionsThatShrinkAndRoundTrips) {
  testing::TempDir dir;
  std::string descriptor = R"({"family":"llama","note":")";
  for (int i = 0; i < 200; ++i) descriptor += "layer " + std::to_string(i % 7) + " ";
  descriptor += R"("})";
  const std::string config = R"({"context_length":16})";
  const std::vector<uint8_t> tokenizer = vocab_like(200000);
  std::vector<float> a(64 * 3, 0.5f);
  auto write = [&](int level, const std::string& path) {
    PackageWriter w;
    w.set_compression_level(level);
    w.set_descriptor(descriptor);
    w.set_inference_config(config);
    w.set_tokenizer(tokenizer);
    for (int i = 0; i < 40; ++i) {  // a directory of some size
      EXPECT_TRUE(w.add_tensor("blk." + std::to_string(i) + ".attn_q.weight", DType::kF32, {64, 3},
                               std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(a.data()), a.size() * 4))
                      .is_ok());
    }
    return w.write(path);
  };
  ASSERT_TRUE(write(kDefaultZstdLevel, dir.file("z.pocket")).is_ok());
  ASSERT_TRUE(write(0, dir.file("plain.pocket")).is_ok());
  auto pkg = Package::open(dir.file("z.pocket"), {true});
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  auto plain = Package::open(dir.file("plain.pocket"), {true});
  ASSERT_TRUE(plain.has_value()) << plain.status().to_string();
  EXPECT_LT(std::filesystem::file_size(dir.file("z.pocket")), std::filesystem::file_size(dir.file("plain.pocket")));

  // Descriptor, tokenizer and directory shrink by whole blocks; the 21-byte config does not.
  const auto& s = pkg->sections();
  ASSERT_EQ(s.size(), 5u);
  for (uint32_t k : {1u, 3u, 4u}) {
    EXPECT_EQ(s[k - 1].flags, kSectionZstd) << section_kind_name(k);
    EXPECT_LT(s[k - 1].size, s[k - 1].decoded_size) << section_kind_name(k);
    EXPECT_EQ(s[k - 1].decoded_size, plain->sections()[k - 1].size) << section_kind_name(k);
  }
  EXPECT_EQ(s[1].flags, 0u);
  EXPECT_EQ(s[1].decoded_size, s[1].size);
  EXPECT_EQ(s[4].flags, kSectionLazyChecksum);
  for (const auto& e : plain->sections()) EXPECT_EQ(e.flags & kSectionZstd, 0u);

  EXPECT_EQ(pkg->descriptor_json(), descriptor);
  EXPECT_EQ(pkg->config_json(), config);
  EXPECT_TRUE(std::ranges::equal(pkg->tokenizer_bytes(), tokenizer));
  ASSERT_EQ(pkg->tensors().size(), 40u);
  const TensorInfo* t = pkg->find("blk.39.attn_q.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::memcmp(t->data, a.data(), t->size), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 64, 0u);
  EXPECT_TRUE(pkg->verify_checksums().is_ok());

  // The decoded content belongs to the Package and moves with it.
  Package moved = std::move(*pkg);
  EXPECT_EQ(moved.descriptor_json(), descriptor);
  EXPECT_TRUE(std::ranges::equal(moved.tokenizer_bytes(), tokenizer));
}

TEST(SectionCompression, WriterKeepsSmallAndIncompressibleSectionsPlain) {
  testing::TempDir dir;
  PackageWriter w;
  w.set_tokenizer(random_bytes(20000, 3));
  ASSERT_TRUE(w.write(dir.file("r.pocket")).is_ok());
  auto pkg = Package::open(dir.file("r.pocket"), {true});
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  for (const auto& e : pkg->sections()) {
    EXPECT_EQ(e.flags & kSectionZstd, 0u) << section_kind_name(e.kind);
    EXPECT_EQ(e.decoded_size, e.size);
  }
  EXPECT_EQ(pkg->tokenizer_bytes().size(), 20000u);
}

TEST(SectionCompression, WriterRefusesBadLevelAndLeavesNoFile) {
  testing::TempDir dir;
  for (int level : {-1, max_zstd_level() + 1}) {
    PackageWriter w;
    w.set_compression_level(level);
    Status s = w.write(dir.file("x.pocket"));
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find("zstd level"), std::string::npos) << s.message();
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.pocket")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.pocket.tmp")));
  }
}

TEST(SectionCompression, EverySmallSectionMayBeCompressed) {
  PackageBuilder b;
  b.zstd_kinds = {1, 2, 3, 4};
  const PackageImage img = b.build();
  auto pkg = parse(img.bytes);
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  EXPECT_EQ(pkg->descriptor_json(), b.descriptor);
  EXPECT_EQ(pkg->config_json(), b.config);
  EXPECT_TRUE(std::ranges::equal(pkg->tokenizer_bytes(), b.tokenizer));
  ASSERT_EQ(pkg->tensors().size(), 3u);
  EXPECT_EQ(pkg->find("blk.0.ffn_up")->size, 72u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pkg->sections()[i].flags, kSectionZstd);
    EXPECT_EQ(pkg->sections()[i].size, img.sections[i].bytes.size());
  }
  EXPECT_EQ(pkg->sections()[0].decoded_size, b.descriptor.size());
  EXPECT_EQ(pkg->sections()[2].decoded_size, b.tokenizer.size());
}

// The content rules apply to what a section decodes to.
TEST(SectionCompression, DecodedContentIsValidatedLikePlainContent) {
  PackageBuilder bad_text;
  bad_text.zstd_kinds = {1};
  bad_text.descriptor = "{\"a\":\"\xC0\xAF\"}";
  EXPECT_TRUE(fails_with(parse(bad_text.build().bytes), ErrorCode::kCorruptFile,
                         {"descriptor section is not valid UTF-8"}));
  PackageBuilder bad_dir;
  bad_dir.zstd_kinds = {4};
  bad_dir.tensors[1].dims = {0};
  EXPECT_TRUE(fails_with(parse(bad_dir.build().bytes), ErrorCode::kCorruptFile, {"tensor 'norm' dimension 0 is 0"}));
  PackageBuilder trailing;
  trailing.zstd_kinds = {4};
  trailing.directory_suffix = {0};
  EXPECT_TRUE(fails_with(parse(trailing.build().bytes), ErrorCode::kCorruptFile, {"1 trailing bytes"}));
}

// An empty content encodes to a frame of no bytes; a reader accepts it although the writer never writes one.
TEST(SectionCompression, EmptyCompressedSectionOpens) {
  auto pkg = parse(with_stored_tokenizer(encode({})));
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  EXPECT_TRUE(pkg->tokenizer_bytes().empty());
}

// ---- Bad compressed sections ----------------------------------------------------------------------------

// `stored` with its decoded-size prefix replaced by n: opening fails as corrupt with every part of the
// message, and nothing near the declared size is allocated on the way.
void expect_declared_size_rejected(const std::vector<uint8_t>& stored, uint64_t n, std::vector<std::string> parts) {
  auto s = stored;
  put_u64(s, 0, n);
  auto bytes = with_stored_tokenizer(s);
  AllocationProbe probe;
  parts.insert(parts.begin(), kTok);
  EXPECT_TRUE(fails_with(parse(bytes), ErrorCode::kCorruptFile, parts)) << n;
  EXPECT_LT(probe.largest(), kFlatMemory) << n;
}

TEST(SectionCompression, AbsurdDecodedSizesRejectedBeforeAllocation) {
  const auto stored = encode(vocab_like(4096));
  const uint64_t frame = stored.size() - 8;
  for (uint64_t n : {kMaxDecodedSectionBytes + 1, uint64_t{1} << 40, uint64_t{1} << 63, UINT64_MAX}) {
    expect_declared_size_rejected(stored, n,
                                  {"declares " + std::to_string(n) + " decoded bytes", "over the limit of 268435456"});
  }
  // Under the limit, but more than a frame of this size can decode to.
  for (uint64_t n : {frame * kZstdMaxExpansion + 1, kMaxDecodedSectionBytes}) {
    expect_declared_size_rejected(stored, n, {"more than its " + std::to_string(frame) + "-byte zstd frame can hold"});
  }
}

TEST(SectionCompression, DecodedSizeMismatchRejectedBeforeAllocation) {
  const auto stored = encode(vocab_like(100000));
  for (uint64_t n : {uint64_t{0}, uint64_t{99999}, uint64_t{100001}, uint64_t{200000}}) {
    expect_declared_size_rejected(stored, n,
                                  {"declares " + std::to_string(n) + " decoded bytes but its zstd frame holds 100000"});
  }
}

TEST(SectionCompression, FrameWithoutContentSizeIsRejected) {
  const auto content = vocab_like(5000);
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ASSERT_EQ(ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0)), 0u);
  std::vector<uint8_t> stored(8 + ZSTD_compressBound(content.size()));
  const size_t n = ZSTD_compress2(c, stored.data() + 8, stored.size() - 8, content.data(), content.size());
  ZSTD_freeCCtx(c);
  ASSERT_EQ(ZSTD_isError(n), 0u);
  stored.resize(8 + n);
  put_u64(stored, 0, content.size());
  EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(stored)), ErrorCode::kCorruptFile,
                         {kTok, "does not record its content size"}));
}

TEST(SectionCompression, ShortOrForeignStoredBytesAreRejected) {
  for (size_t n : {0, 1, 7}) {
    EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(std::vector<uint8_t>(n, 1))), ErrorCode::kCorruptFile,
                           {kTok, "has " + std::to_string(n) + " bytes, fewer than its 8-byte size prefix"}));
  }
  std::vector<uint8_t> text(8, 0);
  for (char ch : std::string("not zstd at all")) text.push_back(static_cast<uint8_t>(ch));
  put_u64(text, 0, 3);
  EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(text)), ErrorCode::kCorruptFile,
                         {kTok, "does not hold a zstd frame"}));
  // A skippable frame (magic 0x184D2A50) is not a zstd frame of the content.
  std::vector<uint8_t> skippable = {0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x2A, 0x4D, 0x18, 2, 0, 0, 0, 9, 9};
  EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(skippable)), ErrorCode::kCorruptFile,
                         {kTok, "does not hold a zstd frame"}));
  // Only the prefix: no frame at all.
  auto prefix_only = encode(vocab_like(100));
  prefix_only.resize(8);
  put_u64(prefix_only, 0, 0);
  EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(prefix_only)), ErrorCode::kCorruptFile,
                         {kTok, "does not hold a zstd frame"}));
}

TEST(SectionCompression, BytesAfterTheFrameAreRejected) {
  auto stored = encode(vocab_like(3000));
  auto trailing = stored;
  trailing.push_back(0);
  EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(trailing)), ErrorCode::kCorruptFile,
                         {kTok, "has 1 bytes after its zstd frame"}));
  // A second frame: one frame per section, not a concatenation.
  auto two = stored;
  two.insert(two.end(), stored.begin() + 8, stored.end());
  EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(two)), ErrorCode::kCorruptFile,
                         {kTok, "bytes after its zstd frame"}));
}

// Stored bytes cut at every length (the table's size shrinks with them): never a crash, always an error
// naming the section.
TEST(SectionCompression, TruncatedFrameAtEveryLength) {
  const auto stored = encode(vocab_like(20000));
  for (size_t n = 0; n < stored.size(); ++n) {
    SCOPED_TRACE("stored bytes cut to " + std::to_string(n));
    const std::vector<uint8_t> cut(stored.begin(), stored.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = parse(with_stored_tokenizer(cut));
    EXPECT_TRUE(fails_with(r, ErrorCode::kCorruptFile, {kTok}));
  }
}

// The file itself cut inside the compressed section: the reader names the section before decoding anything.
TEST(SectionCompression, FileTruncatedInsideCompressedSection) {
  PackageBuilder b;
  b.tokenizer = vocab_like(20000);
  b.zstd_kinds = {3};
  const PackageImage img = b.build();
  const uint64_t at = img.offset_of(SectionKind::kTokenizer), size = img.size_of(SectionKind::kTokenizer);
  for (uint64_t cut = at + 1; cut < at + size; cut += 7) {
    EXPECT_TRUE(fails_with(parse({img.bytes.data(), cut}), ErrorCode::kCorruptFile, {"file truncated in " + kTok}))
        << cut;
  }
}

// Every byte of the frame flipped, checksums resealed (as a forger or a fuzzer would): an error naming the
// section, or — where a flip does not change the meaning — exactly the original content. Never other bytes.
TEST(SectionCompression, DamagedFrameIsAnErrorNeverSilentGarbage) {
  const auto content = vocab_like(20000);
  const auto stored = encode(content);
  size_t n_errors = 0;
  for (size_t i = 8; i < stored.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}}) {
      auto s = stored;
      s[i] ^= mask;
      auto r = parse(with_stored_tokenizer(s));
      if (r.has_value()) {
        EXPECT_TRUE(std::ranges::equal(r->tokenizer_bytes(), content)) << "byte " << i << " mask " << int{mask};
      } else {
        EXPECT_TRUE(fails_with(r, ErrorCode::kCorruptFile, {kTok})) << "byte " << i;
        ++n_errors;
      }
    }
  }
  EXPECT_GT(n_errors, (stored.size() - 8) * 2 * 9 / 10);  // the frame's content checksum catches nearly all
}

// Not resealed: the section checksum covers the stored bytes and is checked before decoding.
TEST(SectionCompression, ChecksumCoversStoredBytes) {
  PackageBuilder b;
  b.tokenizer = vocab_like(20000);
  b.zstd_kinds = {3};
  const PackageImage img = b.build();
  for (uint64_t i = 0; i < img.size_of(SectionKind::kTokenizer); i += 13) {
    auto bytes = img.bytes;
    bytes[img.offset_of(SectionKind::kTokenizer) + i] ^= 0x04;
    EXPECT_TRUE(fails_with(parse(bytes), ErrorCode::kCorruptFile,
                           {"checksum mismatch in the tokenizer section", "the file is corrupt"}))
        << i;
  }
}

TEST(SectionCompression, ForbiddenFlagCombinations) {
  const auto stored = encode(vocab_like(3000));
  EXPECT_TRUE(fails_with(parse(with_stored_tokenizer(stored, kSectionZstd | kSectionLazyChecksum)),
                         ErrorCode::kCorruptFile, {kTok, "both ZSTD and LAZY_CHECKSUM"}));
  auto bytes = PackageBuilder().build().bytes;
  put_u32(bytes, testing::entry_pos(4) + testing::kEntryFlags, kSectionLazyChecksum | kSectionZstd);
  reseal(bytes);
  EXPECT_TRUE(fails_with(parse(bytes), ErrorCode::kCorruptFile,
                         {"section 4 (tensor data) is marked ZSTD, but tensor data is never compressed"}));
}

// A compressed section of a kind this build does not know, marked OPTIONAL, is skipped like any other:
// bounds and checksum checked, content not decoded.
TEST(SectionCompression, UnknownOptionalCompressedSectionIsSkipped) {
  PackageBuilder b;
  b.extra_sections.push_back({12, kSectionOptional | kSectionZstd, {1, 2, 3}});  // not even a frame
  auto pkg = parse(b.build().bytes);
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  ASSERT_EQ(pkg->sections().size(), 6u);
  EXPECT_EQ(pkg->sections()[5].decoded_size, 0u);
  PackageBuilder required;
  required.extra_sections.push_back({12, kSectionZstd, encode(vocab_like(100))});
  EXPECT_TRUE(fails_with(parse(required.build().bytes), ErrorCode::kUnsupported, {"has kind 12", "not optional"}));
}

// The reader stays usable after failures on compressed sections.
TEST(SectionCompression, ReaderUsableAfterErrors) {
  auto stored = encode(vocab_like(5000));
  for (int i = 0; i < 3; ++i) {
    auto s = stored;
    s[s.size() / 2] ^= 0x55;
    EXPECT_FALSE(parse(with_stored_tokenizer(s)).has_value());
  }
  auto ok = parse(with_stored_tokenizer(stored));
  ASSERT_TRUE(ok.has_value()) << ok.status().to_string();
  EXPECT_TRUE(std::ranges::equal(ok->tokenizer_bytes(), vocab_like(5000)));
}

}  // namespace
}  // namespace pocket
