// Regressions found by fuzz/gguf_fuzz.cc in the GGUF reader, one test per bug, named after it.
#include <gtest/gtest.h>

#include "convert/gguf_reader.h"
#include "convert/gguf_writer.h"

namespace pocket {
namespace {

// get_f32_array/get_i32_array on an empty array passed a null pointer to memcpy (UBSan, found by fuzzing).
TEST(GgufReaderRegression, EmptyNumericArraysDoNotMemcpyFromNull) {
  GgufWriter w;
  w.add_f32_array("empty.f32", {});
  w.add_i32_array("empty.i32", {});
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes);
  auto g = GgufFile::parse(*bytes, "empty.gguf");
  ASSERT_TRUE(g) << g.status().to_string();
  auto f = g->get_f32_array("empty.f32");
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->empty());
  auto i = g->get_i32_array("empty.i32");
  ASSERT_TRUE(i);
  EXPECT_TRUE(i->empty());
}

}  // namespace
}  // namespace pocket
