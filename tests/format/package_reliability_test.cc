// The package reader against bad input (RELIABILITY.md items 1-7 and 10): truncation, bad magic and
// versions, hostile counts, shapes, offsets, names, sections and checksums. Each case asserts the error code
// and that the message names the problem; packages are laid out by hand (package_builder.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "allocation_probe.h"
#include "format/package.h"
#include "format/package_writer.h"
#include "package_builder.h"
#include "test_util.h"

namespace pocket {
namespace {

using testing::AllocationProbe;
using testing::get_u32;
using testing::get_u64;
using testing::kFlatMemory;
using testing::PackageBuilder;
using testing::PackageImage;
using testing::put_u32;
using testing::put_u64;
using testing::RawSection;
using testing::reseal;

constexpr char kName[] = "test.pocket";

Expected<Package> parse(std::span<const uint8_t> bytes, bool verify_tensor_data = false) {
  OpenOptions opts;
  opts.verify_tensor_data = verify_tensor_data;
  return Package::from_bytes(bytes, kName, opts);
}

// Asserts an error with `code` whose message contains every piece of `parts` and the file's name.
::testing::AssertionResult fails_with(const Expected<Package>& r, ErrorCode code, std::vector<std::string> parts) {
  if (r.has_value()) return ::testing::AssertionFailure() << "opened, expected " << error_code_name(code);
  const Status& s = r.status();
  if (s.code() != code) {
    return ::testing::AssertionFailure() << "code " << error_code_name(s.code()) << ", expected "
                                         << error_code_name(code) << ": " << s.message();
  }
  parts.push_back(kName);
  for (const auto& p : parts) {
    if (s.message().find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks '" << p << "': " << s.message();
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<uint8_t> valid_bytes() { return PackageBuilder().build().bytes; }

TEST(PackageReliability, BuilderOutputIsValid) {
  PackageImage img = PackageBuilder().build();
  auto pkg = parse(img.bytes, true);
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  EXPECT_EQ(pkg->tensors().size(), 3u);
  EXPECT_TRUE(pkg->verify_checksums().is_ok());
  const TensorInfo* q = pkg->find("blk.0.ffn_up");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::kQ4G32);
  EXPECT_EQ(q->size, 2u * 2u * 18u);
}

// The hand layout and PackageWriter follow the same spec independently: same content, same bytes. By
// default the writer compresses exactly the sections that then take fewer 64-byte blocks; of the builder's,
// only the 174-byte tensor directory qualifies.
TEST(PackageReliability, BuilderMatchesWriterByteForByte) {
  PackageBuilder b;
  const PackageImage img = b.build();
  PackageBuilder bz = b;
  bz.zstd_kinds = {static_cast<uint32_t>(SectionKind::kTensorDirectory)};
  const PackageImage imgz = bz.build();
  for (int level : {0, kDefaultZstdLevel}) {
    SCOPED_TRACE("zstd level " + std::to_string(level));
    PackageWriter w;
    w.set_compression_level(level);
    w.set_descriptor(b.descriptor);
    w.set_inference_config(b.config);
    w.set_tokenizer(b.tokenizer);
    const auto data = img.sections[4].bytes;
    uint64_t at = 0;
    for (const auto& t : b.tensors) {
      auto size = tensor_bytes(static_cast<DType>(t.dtype), t.dims);
      ASSERT_TRUE(size);
      at = align_up(at, kTensorAlignment);
      ASSERT_TRUE(w.add_tensor(t.name, static_cast<DType>(t.dtype), t.dims,
                               std::span<const uint8_t>(data.data() + at, *size)).is_ok());
      at += *size;
    }
    // The writer pads between tensors with zeros; the builder's pattern runs through the gaps.
    const PackageImage& want = level == 0 ? img : imgz;
    std::vector<uint8_t> expected = want.bytes;
    const uint64_t data_at = want.offset_of(SectionKind::kTensorData);
    uint64_t end = 0;
    for (size_t i = 0; i < b.tensors.size(); ++i) {
      const uint64_t off = get_u64(img.bytes, img.tensor_pos[i].offset);
      for (uint64_t p = end; p < off; ++p) expected[data_at + p] = 0;
      end = off + get_u64(img.bytes, img.tensor_pos[i].size);
    }
    reseal(expected);
    testing::TempDir dir;
    ASSERT_TRUE(w.write(dir.file("w.pocket")).is_ok());
    EXPECT_EQ(testing::read_file(dir.file("w.pocket")), expected);
  }
  EXPECT_LT(imgz.bytes.size(), img.bytes.size());
}

// ---- 2. Empty file, magic, version -------------------------------------------------------------------

TEST(PackageReliability, EmptyFile) {
  EXPECT_TRUE(fails_with(parse({}), ErrorCode::kCorruptFile, {"empty file"}));
  testing::TempDir dir;
  testing::write_file(dir.file("empty.pocket"), {});
  auto r = Package::open(dir.file("empty.pocket"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptFile);
  EXPECT_NE(r.status().message().find("empty.pocket"), std::string::npos) << r.status().message();
}

TEST(PackageReliability, MissingFileIsIoError) {
  testing::TempDir dir;
  auto r = Package::open(dir.file("absent.pocket"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::kIoError);
  EXPECT_NE(r.status().message().find("absent.pocket"), std::string::npos);
}

TEST(PackageReliability, WrongMagic) {
  auto b = valid_bytes();
  b[0] = 'G';
  EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"bad magic"}));
  const std::vector<uint8_t> gguf = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  EXPECT_TRUE(fails_with(parse(gguf), ErrorCode::kCorruptFile, {"bad magic"}));
  // Regression: a short file that is not a prefix of the magic is another kind of file, not a truncated one.
  const std::vector<uint8_t> text = {'h', 'i', '\n'};
  EXPECT_TRUE(fails_with(parse(text), ErrorCode::kCorruptFile, {"bad magic"}));
}

TEST(PackageReliability, VersionZeroIsCorrupt) {
  auto b = valid_bytes();
  put_u32(b, testing::kVersionPos, 0);
  reseal(b);
  EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"version 0"}));
}

TEST(PackageReliability, FutureVersionIsUnsupported) {
  for (uint32_t v : {2u, 0x80000000u, 0xFFFFFFFFu}) {
    auto b = valid_bytes();
    put_u32(b, testing::kVersionPos, v);
    reseal(b);
    EXPECT_TRUE(fails_with(parse(b), ErrorCode::kUnsupported,
                           {"version " + std::to_string(v), "reads version 1"}));
  }
}

// Regression: a damaged version field used to be reported as "version N is not supported".
TEST(PackageReliability, DamagedVersionFieldIsCorruption) {
  auto b = valid_bytes();
  b[testing::kVersionPos] ^= 0xFF;  // 1 -> 254, header checksum not updated
  EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"header checksum mismatch", "corrupt"}));
}

// ---- 1. Truncation -----------------------------------------------------------------------------------

// Name of the section (in file order) that a cut at `cut` bytes splits, as the reader reports it.
std::string cut_section(const PackageImage& img, uint64_t cut) {
  uint64_t best = UINT64_MAX;
  std::string name;
  for (size_t i = 0; i < img.sections.size(); ++i) {
    if (img.offsets[i] + img.sections[i].bytes.size() > cut && img.offsets[i] < best) {
      best = img.offsets[i];
      name = "section " + std::to_string(i) + " (" + section_kind_name(img.sections[i].kind) + ")";
    }
  }
  return name;
}

TEST(PackageReliability, TruncatedAtEveryByteNamesHeaderTableOrSection) {
  PackageBuilder builder;
  builder.extra_sections.push_back({77, kSectionOptional, {9, 9, 9}});
  const PackageImage img = builder.build();
  const uint64_t table_end = kHeaderSize + img.sections.size() * kSectionEntrySize;
  for (uint64_t cut = 0; cut < img.bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const std::span<const uint8_t> b(img.bytes.data(), cut);
    auto r = parse(b);
    if (cut == 0) {
      EXPECT_TRUE(fails_with(r, ErrorCode::kCorruptFile, {"empty file"}));
    } else if (cut < kHeaderSize) {
      EXPECT_TRUE(fails_with(r, ErrorCode::kCorruptFile, {"header truncated"}));
    } else if (cut < table_end) {
      EXPECT_TRUE(fails_with(r, ErrorCode::kCorruptFile, {"section table truncated"}));
    } else {
      const std::string section = cut_section(img, cut);
      ASSERT_FALSE(section.empty());
      EXPECT_TRUE(fails_with(r, ErrorCode::kCorruptFile, {"file truncated in " + section}));
    }
  }
}

TEST(PackageReliability, TruncatedFileOnDiskNamesSectionAndPath) {
  PackageImage img = PackageBuilder().build();
  const uint64_t cut = img.offset_of(SectionKind::kTensorData) + 1;
  testing::TempDir dir;
  testing::write_file(dir.file("cut.pocket"), std::vector<uint8_t>(img.bytes.begin(), img.bytes.begin() + cut));
  auto r = Package::open(dir.file("cut.pocket"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptFile);
  EXPECT_NE(r.status().message().find("(tensor data)"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("cut.pocket"), std::string::npos) << r.status().message();
}

TEST(PackageReliability, AppendedBytes) {
  auto b = valid_bytes();
  b.push_back(0);
  EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"1 bytes appended"}));
}

// The tensor directory cut at every byte (its size in the table shrunk, checksums recomputed).
TEST(PackageReliability, DirectoryTruncatedAtEveryByte) {
  const PackageImage img = PackageBuilder().build();
  const uint32_t dir_index = static_cast<uint32_t>(img.index_of(SectionKind::kTensorDirectory));
  for (uint64_t size = 0; size < img.size_of(SectionKind::kTensorDirectory); ++size) {
    SCOPED_TRACE("directory size " + std::to_string(size));
    auto b = img.bytes;
    put_u64(b, testing::entry_pos(dir_index) + testing::kEntrySize, size);
    reseal(b);
    auto r = parse(b);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.status().code(), ErrorCode::kCorruptFile) << r.status().message();
    const std::string& m = r.status().message();
    EXPECT_TRUE(m.find("tensor directory") != std::string::npos || m.find("truncated") != std::string::npos) << m;
  }
}

// ---- 3. Hostile counts, refused before allocating -----------------------------------------------------

TEST(PackageReliability, SectionCountsRejectedBeforeAllocation) {
  for (uint32_t n : {0u, kMaxSections + 1, 0x80000000u, 0xFFFFFFFFu}) {
    auto b = valid_bytes();
    put_u32(b, testing::kNSectionsPos, n);
    reseal(b);
    AllocationProbe probe;
    auto r = parse(b);
    EXPECT_TRUE(fails_with(r, ErrorCode::kCorruptFile, {"section count " + std::to_string(n), "1..64"}));
    EXPECT_LT(probe.largest(), kFlatMemory);
  }
}

TEST(PackageReliability, TensorCountsRejectedBeforeAllocation) {
  for (uint32_t n : {kMaxTensors + 1, 0x80000000u, 0xFFFFFFFFu}) {
    PackageImage img = PackageBuilder().build();
    put_u32(img.bytes, img.n_tensors_pos, n);
    reseal(img.bytes);
    AllocationProbe probe;
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile,
                           {"tensor count " + std::to_string(n), "exceeds the limit"}));
    EXPECT_LT(probe.largest(), kFlatMemory);
  }
  // Within the limit but more than the directory can hold.
  for (uint32_t n : {5u, 1000u, kMaxTensors}) {
    PackageImage img = PackageBuilder().build();
    put_u32(img.bytes, img.n_tensors_pos, n);
    reseal(img.bytes);
    AllocationProbe probe;
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile,
                           {"claims " + std::to_string(n) + " tensors"}));
    EXPECT_LT(probe.largest(), kFlatMemory);
  }
  // One more than present, within what the bytes could hold: found missing while reading.
  PackageImage img = PackageBuilder().build();
  put_u32(img.bytes, img.n_tensors_pos, 4);
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"tensor #3 truncated at its name length"}));
}

TEST(PackageReliability, NameLengthsRejectedBeforeAllocation) {
  for (uint32_t n : {0u, kMaxTensorName + 1, 0x80000000u, 0xFFFFFFFFu}) {
    PackageImage img = PackageBuilder().build();
    put_u32(img.bytes, img.tensor_pos[1].name_len, n);
    reseal(img.bytes);
    AllocationProbe probe;
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile,
                           {"tensor #1 name length " + std::to_string(n), "1..512"}));
    EXPECT_LT(probe.largest(), kFlatMemory);
  }
  // A length within the limit that runs past the directory.
  PackageImage img = PackageBuilder().build();
  put_u32(img.bytes, img.tensor_pos[2].name_len, kMaxTensorName);
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"tensor #2 truncated in its name"}));
}

TEST(PackageReliability, DimCountsRejectedBeforeAllocation) {
  for (uint32_t n : {0u, kMaxDims + 1, 0x80000000u, 0xFFFFFFFFu}) {
    PackageImage img = PackageBuilder().build();
    put_u32(img.bytes, img.tensor_pos[0].n_dims, n);
    reseal(img.bytes);
    AllocationProbe probe;
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile,
                           {"tensor 'tok_embeddings' has " + std::to_string(n) + " dimensions", "1..4"}));
    EXPECT_LT(probe.largest(), kFlatMemory);
  }
  PackageBuilder b;
  b.tensors[0].dims = {1, 1, 1, 2, 3};
  EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile, {"has 5 dimensions"}));
}

// ---- 4. Dimensions, shapes, dtypes, layouts ------------------------------------------------------------

TEST(PackageReliability, ZeroOrHugeDimension) {
  for (uint64_t d : {uint64_t{0}, kMaxDim + 1, uint64_t{1} << 63, UINT64_MAX}) {
    PackageImage img = PackageBuilder().build();
    put_u64(img.bytes, img.tensor_pos[0].dims + 8, d);  // dimension 1 of [2, 3]
    reseal(img.bytes);
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile,
                           {"tensor 'tok_embeddings' dimension 1 is " + std::to_string(d), "1..2^40"}));
  }
}

TEST(PackageReliability, LargestDimensionPassesShapeChecksThenFailsOnBounds) {
  PackageBuilder b;
  b.tensors[0].dims = {kMaxDim};  // 4 TiB of f32: a legal shape that this file cannot hold
  EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile,
                         {"tensor 'tok_embeddings'", "runs past the end of the tensor data"}));
}

TEST(PackageReliability, ShapeProductOverflows) {
  PackageBuilder b;
  b.tensors[0].dims = {kMaxDim, kMaxDim, kMaxDim};  // 2^120 elements
  b.tensors[0].size = 64;
  EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile, {"'tok_embeddings' shape size overflows"}));
  // q4_g64 [2^30, 2^34]: 2^64 elements overflow although the byte count (~2^63.1) does not.
  PackageBuilder q;
  q.tensors[2].dtype = static_cast<uint32_t>(DType::kQ4G64);
  q.tensors[2].dims = {uint64_t{1} << 30, uint64_t{1} << 34};
  q.tensors[2].size = *tensor_bytes(DType::kQ4G64, q.tensors[2].dims);
  EXPECT_TRUE(fails_with(parse(q.build().bytes), ErrorCode::kCorruptFile, {"'blk.0.ffn_up' shape size overflows"}));
}

TEST(PackageReliability, UnknownDtype) {
  for (uint32_t dt : {3u, 15u, 21u, 0xFFFFFFFFu}) {
    PackageImage img = PackageBuilder().build();
    put_u32(img.bytes, img.tensor_pos[1].dtype, dt);
    reseal(img.bytes);
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kUnsupported,
                           {"tensor 'norm' has unknown dtype " + std::to_string(dt)}));
  }
}

TEST(PackageReliability, InterleavedQ4NeedsWholeEightRowGroups) {
  // q4_g32r8 (8-row interleaved q4_g32) with 2 rows: the right byte count for 2 rows, but not a whole group.
  PackageBuilder b;
  b.tensors[2].dtype = static_cast<uint32_t>(DType::kQ4G32R8);
  EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile,
                         {"'blk.0.ffn_up'", "q4_g32r8 but not a matrix of whole 8-row groups"}));
  PackageBuilder ok;  // 8 rows: accepted
  ok.tensors[2].dtype = static_cast<uint32_t>(DType::kQ4G32R8);
  ok.tensors[2].dims = {8, 40};
  ok.tensors[2].size = *tensor_bytes(DType::kQ4G32R8, ok.tensors[2].dims);
  EXPECT_TRUE(parse(ok.build().bytes).has_value());
}

TEST(PackageReliability, UnknownLayout) {
  for (uint32_t layout : {1u, 0xFFFFFFFFu}) {
    PackageImage img = PackageBuilder().build();
    put_u32(img.bytes, img.tensor_pos[2].layout, layout);
    reseal(img.bytes);
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kUnsupported,
                           {"tensor 'blk.0.ffn_up' has unknown layout " + std::to_string(layout)}));
  }
}

// ---- 5. Tensor offsets and sizes -----------------------------------------------------------------------

TEST(PackageReliability, MisalignedTensorOffset) {
  PackageImage img = PackageBuilder().build();
  put_u64(img.bytes, img.tensor_pos[1].offset, get_u64(img.bytes, img.tensor_pos[1].offset) + 8);
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"tensor 'norm' offset", "not 64-byte aligned"}));
}

TEST(PackageReliability, TensorPastTheEnd) {
  PackageImage img = PackageBuilder().build();
  const uint64_t data_size = img.size_of(SectionKind::kTensorData);
  put_u64(img.bytes, img.tensor_pos[2].offset, align_up(data_size, kTensorAlignment));
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile,
                         {"tensor 'blk.0.ffn_up'", "runs past the end of the tensor data (" +
                                                       std::to_string(data_size) + " bytes)"}));
}

TEST(PackageReliability, TensorOffsetPlusSizeWraps) {
  PackageImage img = PackageBuilder().build();
  put_u64(img.bytes, img.tensor_pos[0].offset, UINT64_MAX - 63);  // 64-aligned; + 24 bytes wraps
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"tensor 'tok_embeddings'", "runs past the end"}));
}

TEST(PackageReliability, OverlappingTensors) {
  PackageBuilder b;
  b.tensors[0].dims = {4, 30};  // 480 bytes at [0, 480)
  PackageImage img = b.build();
  put_u64(img.bytes, img.tensor_pos[1].offset, 64);  // inside tok_embeddings
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"'tok_embeddings' and 'norm' overlap"}));
  // Same start: reported in directory order.
  img = PackageBuilder().build();
  put_u64(img.bytes, img.tensor_pos[2].offset, get_u64(img.bytes, img.tensor_pos[1].offset));
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"'norm' and 'blk.0.ffn_up' overlap"}));
}

TEST(PackageReliability, SizeDisagreesWithTypeAndShape) {
  for (int delta : {-1, 1}) {
    PackageImage img = PackageBuilder().build();
    put_u64(img.bytes, img.tensor_pos[2].size, 72 + delta);
    reseal(img.bytes);
    EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile,
                           {"tensor 'blk.0.ffn_up' has " + std::to_string(72 + delta) + " bytes", "q4_g32",
                            "need 72"}));
  }
  PackageImage img = PackageBuilder().build();
  put_u64(img.bytes, img.tensor_pos[0].size, UINT64_MAX);
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"need 24"}));
}

// ---- 6. Names, directory framing -----------------------------------------------------------------------

TEST(PackageReliability, DuplicateTensorNames) {
  PackageBuilder b;
  b.tensors[2].name = "norm";
  EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile, {"duplicate tensor 'norm'"}));
}

TEST(PackageReliability, TensorNameWithNul) {
  PackageBuilder b;
  b.tensors[1].name = std::string("no\0rm", 5);
  EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile, {"tensor #1 name contains a NUL"}));
}

// Regression: names were documented as UTF-8 but not checked.
TEST(PackageReliability, TensorNameNotUtf8) {
  for (std::string bad : {"\xFF", "a\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "ab\xE2\x82"}) {
    PackageBuilder b;
    b.tensors[0].name = bad;
    EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile, {"tensor #0 name is not valid UTF-8"}));
  }
  PackageBuilder ok;
  ok.tensors[0].name = "blk.0.\xE6\xB3\xA8\xE6\x84\x8F\xF0\x9F\x98\x80";  // CJK and an emoji
  EXPECT_TRUE(parse(ok.build().bytes).has_value());
}

TEST(PackageReliability, TrailingBytesInDirectory) {
  for (size_t n : {size_t{1}, size_t{41}, size_t{100}}) {
    PackageBuilder b;
    b.directory_suffix.assign(n, 0);
    EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kCorruptFile,
                           {"tensor directory has " + std::to_string(n) + " trailing bytes"}));
  }
}

// Regression: the directory's reserved word was not checked.
TEST(PackageReliability, DirectoryReservedWordMustBeZero) {
  PackageImage img = PackageBuilder().build();
  put_u32(img.bytes, img.n_tensors_pos + 4, 1);
  reseal(img.bytes);
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"tensor directory reserved field"}));
}

TEST(PackageReliability, EmptyDirectoryIsValid) {
  PackageBuilder b;
  b.tensors.clear();
  auto pkg = parse(b.build().bytes, true);
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  EXPECT_TRUE(pkg->tensors().empty());
  EXPECT_EQ(pkg->find("norm"), nullptr);
}

// ---- 7. Descriptor and config text ---------------------------------------------------------------------

// Regression: sections 1 and 2 are specified as UTF-8 but were handed on unchecked.
TEST(PackageReliability, DescriptorAndConfigMustBeUtf8) {
  PackageBuilder d;
  d.descriptor = "{\"family\":\"ll\xC3\x28ma\"}";
  EXPECT_TRUE(fails_with(parse(d.build().bytes), ErrorCode::kCorruptFile,
                         {"descriptor section is not valid UTF-8 (byte 13 "}));
  PackageBuilder c;
  c.config = "{\"x\":\"\xED\xBF\xBF\"}";  // a lone surrogate
  EXPECT_TRUE(fails_with(parse(c.build().bytes), ErrorCode::kCorruptFile, {"inference config section is not valid UTF-8"}));
}

// ---- Header and section table fields -------------------------------------------------------------------

TEST(PackageReliability, HeaderFields) {
  auto b = valid_bytes();
  put_u32(b, testing::kHeaderSizePos, 128);
  reseal(b);
  EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"header_size is 128"}));
  b = valid_bytes();
  put_u32(b, testing::kHeaderFlagsPos, 4);
  reseal(b);
  EXPECT_TRUE(fails_with(parse(b), ErrorCode::kUnsupported, {"unknown header flags 4"}));
  // Regression: the reserved bytes were not checked (and no checksum covers them).
  for (uint64_t p = testing::kReservedPos; p < kHeaderSize; ++p) {
    b = valid_bytes();
    b[p] = 1;
    reseal(b);
    EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"reserved"}));
  }
}

TEST(PackageReliability, SectionTableFields) {
  const PackageImage img = PackageBuilder().build();
  const uint32_t cfg = 1;  // inference config's table index
  auto patched = [&](uint64_t field, uint64_t v, bool wide) {
    auto b = img.bytes;
    if (wide) {
      put_u64(b, testing::entry_pos(cfg) + field, v);
    } else {
      put_u32(b, testing::entry_pos(cfg) + field, static_cast<uint32_t>(v));
    }
    reseal(b);
    return b;
  };
  const uint64_t off = img.offsets[cfg];
  for (uint32_t flags : {8u, 0x80000000u}) {
    EXPECT_TRUE(fails_with(parse(patched(testing::kEntryFlags, flags, false)), ErrorCode::kUnsupported,
                           {"section 1 (inference config) has unknown flags"}));
  }
  EXPECT_TRUE(fails_with(parse(patched(testing::kEntryOffset, off + 8, true)), ErrorCode::kCorruptFile,
                         {"section 1 (inference config) offset", "not 64-byte aligned"}));
  EXPECT_TRUE(fails_with(parse(patched(testing::kEntryOffset, kHeaderSize, true)), ErrorCode::kCorruptFile,
                         {"section 1 (inference config) offset 64", "after the section table"}));
  EXPECT_TRUE(fails_with(parse(patched(testing::kEntrySize, img.bytes.size(), true)), ErrorCode::kCorruptFile,
                         {"section 1 (inference config)", "runs past the end of the file"}));
  EXPECT_TRUE(fails_with(parse(patched(testing::kEntryOffset, UINT64_MAX - 63, true)), ErrorCode::kCorruptFile,
                         {"section 1 (inference config)", "runs past the end of the file"}));
  EXPECT_TRUE(fails_with(parse(patched(testing::kEntrySize, img.offsets[cfg + 1] - off + 1, true)),
                         ErrorCode::kCorruptFile, {"sections inference config and tokenizer overlap"}));
  EXPECT_TRUE(fails_with(parse(patched(testing::kEntryKind, 1, false)), ErrorCode::kCorruptFile,
                         {"duplicate descriptor section"}));
}

TEST(PackageReliability, RequiredSectionMissing) {
  auto b = valid_bytes();
  put_u32(b, testing::entry_pos(2) + testing::kEntryKind, 40);  // the tokenizer becomes an optional extra
  put_u32(b, testing::entry_pos(2) + testing::kEntryFlags, kSectionOptional);
  reseal(b);
  EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"required section 'tokenizer' is missing"}));
}

TEST(PackageReliability, UnknownRequiredSectionIsUnsupported) {
  PackageBuilder b;
  b.extra_sections.push_back({9, 0, {1, 2, 3}});
  EXPECT_TRUE(fails_with(parse(b.build().bytes), ErrorCode::kUnsupported,
                         {"section 5 (unknown) has kind 9", "not optional"}));
}

TEST(PackageReliability, UnknownOptionalSectionIsSkipped) {
  PackageBuilder b;
  b.extra_sections.push_back({9, kSectionOptional, {1, 2, 3}});
  b.extra_sections.push_back({0xFFFFFFFF, kSectionOptional | kSectionLazyChecksum, std::vector<uint8_t>(100, 5)});
  PackageImage img = b.build();
  for (bool verify : {false, true}) {
    auto pkg = parse(img.bytes, verify);
    ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
    EXPECT_EQ(pkg->sections().size(), 7u);
    EXPECT_EQ(pkg->tensors().size(), 3u);
    EXPECT_EQ(pkg->descriptor_json(), b.descriptor);
    EXPECT_TRUE(pkg->verify_checksums().is_ok());
  }
  // Skipped, but still covered by its checksum.
  img.bytes[img.offsets[5] + 1] ^= 1;
  EXPECT_TRUE(fails_with(parse(img.bytes), ErrorCode::kCorruptFile, {"checksum mismatch in the unknown section"}));
}

// ---- 10. Checksums -------------------------------------------------------------------------------------

TEST(PackageReliability, FlippedHeaderByteIsCorruption) {
  const auto good = valid_bytes();
  for (uint64_t p = 0; p < kHeaderSize; ++p) {
    SCOPED_TRACE("byte " + std::to_string(p));
    auto b = good;
    b[p] ^= 0xFF;
    const char* expect = p < 8 ? "bad magic" : p < testing::kReservedPos ? "the file is corrupt" : "reserved";
    EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {expect}));
  }
}

TEST(PackageReliability, FlippedSectionTableByteIsCorruption) {
  const auto good = valid_bytes();
  const uint64_t table_end = kHeaderSize + 5 * kSectionEntrySize;
  for (uint64_t p = kHeaderSize; p < table_end; ++p) {
    auto b = good;
    b[p] ^= 0x10;
    EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"section table checksum mismatch", "the file is corrupt"}))
        << "byte " << p;
  }
}

TEST(PackageReliability, FlippedByteInEachSectionIsCorruption) {
  const PackageImage img = PackageBuilder().build();
  for (SectionKind k : {SectionKind::kDescriptor, SectionKind::kInferenceConfig, SectionKind::kTokenizer,
                        SectionKind::kTensorDirectory}) {
    const std::string name = section_kind_name(static_cast<uint32_t>(k));
    for (uint64_t i = 0; i < img.size_of(k); ++i) {
      auto b = img.bytes;
      b[img.offset_of(k) + i] ^= 0x01;
      EXPECT_TRUE(fails_with(parse(b), ErrorCode::kCorruptFile, {"checksum mismatch in the " + name + " section",
                                                                  "the file is corrupt"}))
          << name << " byte " << i;
    }
  }
}

TEST(PackageReliability, FlippedTensorDataByteIsFoundOnDemandOrAtOpen) {
  PackageImage img = PackageBuilder().build();
  img.bytes[img.offset_of(SectionKind::kTensorData) + 30] ^= 0x80;
  auto lazy = parse(img.bytes);  // tensor data is LAZY_CHECKSUM: opening does not read it
  ASSERT_TRUE(lazy.has_value()) << lazy.status().to_string();
  Status s = lazy->verify_checksums();
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile);
  EXPECT_NE(s.message().find("checksum mismatch in the tensor data section: the file is corrupt"), std::string::npos)
      << s.message();
  EXPECT_TRUE(fails_with(parse(img.bytes, true), ErrorCode::kCorruptFile,
                         {"checksum mismatch in the tensor data section", "the file is corrupt"}));
}

// The reader stays usable after any number of failures: a valid package still opens.
TEST(PackageReliability, ReaderUsableAfterErrors) {
  for (int i = 0; i < 3; ++i) {
    auto b = valid_bytes();
    b[100] ^= 1;
    EXPECT_FALSE(parse(b).has_value());
  }
  EXPECT_TRUE(parse(valid_bytes(), true).has_value());
}

}  // namespace
}  // namespace pocket

namespace pocket {
namespace {

// Writes the fuzz seed corpus (fuzz/corpus/package/; `.seed`, since .gitignore drops *.pocket) when
// POCKET_WRITE_FUZZ_SEEDS names a folder:
//   POCKET_WRITE_FUZZ_SEEDS=fuzz/corpus/package build/fmt/tests/pocket_format_tests --gtest_filter='*FuzzSeeds*'
TEST(PackageFuzzSeeds, Write) {
  const char* dir = std::getenv("POCKET_WRITE_FUZZ_SEEDS");
  if (dir == nullptr) GTEST_SKIP() << "set POCKET_WRITE_FUZZ_SEEDS=<folder> to write the fuzz seeds";
  std::vector<std::pair<std::string, PackageBuilder>> seeds;
  seeds.emplace_back("small.seed", PackageBuilder());
  PackageBuilder extra;
  extra.extra_sections.push_back({9, kSectionOptional, {1, 2, 3, 4}});
  seeds.emplace_back("optional-section.seed", extra);
  PackageBuilder empty;
  empty.tensors.clear();
  empty.tokenizer.clear();
  empty.descriptor = "{}";
  empty.config = "{}";
  seeds.emplace_back("no-tensors.seed", empty);
  PackageBuilder types;
  types.tensors = {{"a", static_cast<uint32_t>(DType::kBF16), 0, {1, 2, 1, 3}, {}, {}},
                   {"b", static_cast<uint32_t>(DType::kQ8G32), 0, {33}, {}, {}},
                   {"c", static_cast<uint32_t>(DType::kQ4G64), 0, {2, 64}, {}, {}},
                   {"d", static_cast<uint32_t>(DType::kQ4G32A), 0, {1, 31}, {}, {}}};
  seeds.emplace_back("dtypes.seed", types);
  PackageBuilder zstd;  // every small section compressed, so mutations reach the zstd decoder
  zstd.zstd_kinds = {1, 2, 3, 4};
  zstd.tokenizer.clear();
  for (int i = 0; i < 64; ++i) {
    const std::string piece = "[tok" + std::to_string(i) + "]";
    zstd.tokenizer.insert(zstd.tokenizer.end(), piece.begin(), piece.end());
  }
  seeds.emplace_back("zstd-sections.seed", zstd);
  for (const auto& [name, b] : seeds) {
    const auto bytes = b.build().bytes;
    ASSERT_TRUE(Package::from_bytes(bytes, name, {true}).has_value()) << name;
    testing::write_file(std::string(dir) + "/" + name, bytes);
  }
}

}  // namespace
}  // namespace pocket
