// Shape helpers of ir/shape.h: broadcasting and axis normalisation.
#include <gtest/gtest.h>

#include <string>

#include "quabla/ir/errors.h"
#include "quabla/ir/shape.h"

namespace qb {
namespace {

TEST(Shape, NumElementsAndStrides) {
  EXPECT_EQ(num_elements(Shape{}), 1);
  EXPECT_EQ(num_elements(Shape{2, 3, 4}), 24);
  EXPECT_EQ(row_major_strides(Shape{2, 3, 4}), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(row_major_strides(Shape{5}), (std::vector<std::int64_t>{1}));
  EXPECT_TRUE(row_major_strides(Shape{}).empty());
  EXPECT_EQ(shape_str(Shape{2, 3}), "[2, 3]");
  EXPECT_EQ(shape_str(Shape{}), "[]");
}

TEST(Shape, NumElementsSaturatesInsteadOfWrapping) {
  // 2^62 + 1 times 4 wraps to 4 in 64-bit arithmetic; a reshape check must not be fooled.
  EXPECT_EQ(num_elements(Shape{(std::int64_t{1} << 62) + 1, 4}), INT64_MAX);
  EXPECT_EQ(num_elements(Shape{std::int64_t{1} << 32, std::int64_t{1} << 32}), INT64_MAX);
  EXPECT_EQ(num_elements(Shape{std::int64_t{1} << 31, std::int64_t{1} << 31}), std::int64_t{1} << 62);
}

TEST(Shape, CheckShapeRejectsNonPositiveHugeAndDeepShapes) {
  EXPECT_NO_THROW(check_shape(Shape{}, "f"));
  EXPECT_NO_THROW(check_shape(Shape{kMaxElements}, "f"));
  EXPECT_NO_THROW(check_shape(Shape(kMaxRank, 1), "f"));
  auto message = [](const Shape& s, bool allow_zero = false) {
    try {
      check_shape(s, "zeros", allow_zero);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(Shape{kMaxElements + 1}).find("zeros: shape"), std::string::npos);
  EXPECT_NE(message(Shape{std::int64_t{1} << 61}).find("too big"), std::string::npos);
  EXPECT_NE(message(Shape{(std::int64_t{1} << 62) + 1, 4}).find("too big"), std::string::npos);
  EXPECT_NE(message(Shape{3, -1}).find("positive"), std::string::npos);
  EXPECT_NE(message(Shape{0, 2}).find("zero-extent"), std::string::npos);
  EXPECT_EQ(message(Shape{0, 2}, true), "no error");
  EXPECT_NE(message(Shape{-1}, true).find("positive"), std::string::npos);
  EXPECT_NE(message(Shape(kMaxRank + 1, 1)).find("at most 64 dimensions"), std::string::npos);
}

TEST(BroadcastShapes, EqualShapes) {
  EXPECT_EQ(broadcast_shapes(Shape{2, 3}, Shape{2, 3}, "f"), (Shape{2, 3}));
}

TEST(BroadcastShapes, ScalarAndOnes) {
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{4, 5}, "f"), (Shape{4, 5}));
  EXPECT_EQ(broadcast_shapes(Shape{4, 5}, Shape{}, "f"), (Shape{4, 5}));
  EXPECT_EQ(broadcast_shapes(Shape{3, 1}, Shape{1, 4}, "f"), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes(Shape{1}, Shape{1}, "f"), (Shape{1}));
}

TEST(BroadcastShapes, DifferentRanks) {
  EXPECT_EQ(broadcast_shapes(Shape{5}, Shape{2, 3, 5}, "f"), (Shape{2, 3, 5}));
  EXPECT_EQ(broadcast_shapes(Shape{8, 1, 6, 1}, Shape{7, 1, 5}, "f"), (Shape{8, 7, 6, 5}));
  EXPECT_EQ(broadcast_shapes(Shape{2, 1, 4}, Shape{3, 1}, "f"), (Shape{2, 3, 4}));
}

TEST(BroadcastShapes, MismatchThrowsValueErrorNamingFunctionAndShapes) {
  EXPECT_THROW(broadcast_shapes(Shape{3}, Shape{4}, "add"), ValueError);
  EXPECT_THROW(broadcast_shapes(Shape{2, 3}, Shape{3, 2}, "add"), ValueError);
  EXPECT_THROW(broadcast_shapes(Shape{2, 1, 3}, Shape{4, 2}, "add"), ValueError);
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4}, "my_fn");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("my_fn"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
  }
}

TEST(NormalizeAxis, PositiveAndNegative) {
  EXPECT_EQ(normalize_axis(0, 3, "f"), 0);
  EXPECT_EQ(normalize_axis(2, 3, "f"), 2);
  EXPECT_EQ(normalize_axis(-1, 3, "f"), 2);
  EXPECT_EQ(normalize_axis(-3, 3, "f"), 0);
}

TEST(NormalizeAxis, OutOfRangeThrows) {
  EXPECT_THROW(normalize_axis(3, 3, "f"), ValueError);
  EXPECT_THROW(normalize_axis(-4, 3, "f"), ValueError);
  EXPECT_THROW(normalize_axis(0, 0, "f"), ValueError);
  EXPECT_THROW(normalize_axis(-1, 0, "f"), ValueError);
  try {
    normalize_axis(5, 2, "sum");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("sum"), std::string::npos) << e.what();
  }
}

TEST(NormalizeAxes, SortsAndResolvesNegatives) {
  EXPECT_EQ(normalize_axes(std::vector<std::int64_t>{-1, 0}, 3, "f"), (std::vector<int>{0, 2}));
  EXPECT_EQ(normalize_axes(std::vector<std::int64_t>{3, -4, 1}, 4, "f"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(normalize_axes(std::vector<std::int64_t>{2, -3}, 4, "f"), (std::vector<int>{1, 2}));
  EXPECT_TRUE(normalize_axes(std::vector<std::int64_t>{}, 2, "f").empty());
}

TEST(NormalizeAxes, DuplicatesThrow) {
  EXPECT_THROW(normalize_axes(std::vector<std::int64_t>{1, 1}, 3, "f"), ValueError);
  // -1 and 2 name the same axis of a rank-3 array.
  EXPECT_THROW(normalize_axes(std::vector<std::int64_t>{-1, 2}, 3, "f"), ValueError);
}

TEST(NormalizeAxes, OutOfRangeThrows) {
  EXPECT_THROW(normalize_axes(std::vector<std::int64_t>{0, 3}, 3, "f"), ValueError);
  EXPECT_THROW(normalize_axes(std::vector<std::int64_t>{-4}, 3, "f"), ValueError);
}

}  // namespace
}  // namespace qb
