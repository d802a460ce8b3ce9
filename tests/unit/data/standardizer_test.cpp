#include "uqnn/data/standardizer.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/core/rng.hpp"

namespace uqnn {
namespace {

Dataset make(const Mat& inputs, const Mat& targets) {
  Dataset d;
  d.inputs = inputs;
  d.targets = targets;
  for (Index r = 0; r < inputs.rows(); ++r) d.input_names.push_back(fmt::format("x{}", r + 1));
  for (Index r = 0; r < targets.rows(); ++r) d.target_names.push_back(fmt::format("y{}", r + 1));
  d.source = "train.csv";
  return d;
}

TEST(Standardizer, FitsMeanAndPopulationSd) {
  // Column x1 = 1,2,3,4: mean 2.5, population sd sqrt(1.25) (sample sd would be sqrt(5/3)).
  const Dataset train = make((Mat(2, 4) << 1, 2, 3, 4, 10, 10, 10, 30).finished(), (Mat(1, 4) << 0, 0, 2, 2).finished());
  const Standardizer s = Standardizer::fit(train);
  EXPECT_FALSE(s.is_identity());
  EXPECT_DOUBLE_EQ(s.input_mean()[0], 2.5);
  EXPECT_DOUBLE_EQ(s.input_scale()[0], std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(s.input_mean()[1], 15.0);
  EXPECT_DOUBLE_EQ(s.input_scale()[1], std::sqrt(75.0));
  EXPECT_DOUBLE_EQ(s.target_mean()[0], 1.0);
  EXPECT_DOUBLE_EQ(s.target_scale()[0], 1.0);
  EXPECT_EQ(s.input_names(), train.input_names);
  // Standardised training data has mean 0 and population sd 1 in every row.
  const Dataset z = s.transform(train);
  for (Index r = 0; r < 2; ++r) {
    EXPECT_NEAR(z.inputs.row(r).mean(), 0.0, 1e-15);
    EXPECT_NEAR(z.inputs.row(r).squaredNorm() / 4.0, 1.0, 1e-14);
  }
  EXPECT_EQ(z.targets, (Mat(1, 4) << -1, -1, 1, 1).finished());
}

TEST(Standardizer, InverseUndoesTransformAndScalesSd) {
  Rng rng(3);
  Mat x(3, 50), y(2, 50);
  for (Index i = 0; i < x.size(); ++i) x(i) = rng.normal(5.0, 3.0);
  for (Index i = 0; i < y.size(); ++i) y(i) = rng.normal(-100.0, 20.0);
  const Standardizer s = Standardizer::fit(make(x, y));
  EXPECT_TRUE(s.inverse_transform_inputs(s.transform_inputs(x)).isApprox(x, 1e-14));
  EXPECT_TRUE(s.inverse_transform_targets(s.transform_targets(y)).isApprox(y, 1e-14));
  // Data transformed elsewhere uses the training statistics, not its own.
  const Mat shifted = x.array() + 1.0;
  EXPECT_TRUE(s.transform_inputs(shifted).isApprox(
      s.transform_inputs(x) + (1.0 / s.input_scale().array()).matrix().replicate(1, 50), 1e-12));
  // sd_original = sd_standardised * scale; variances scale by scale^2; the mean is not added.
  const Mat sd = (Mat(2, 2) << 1.0, 0.5, 2.0, 0.25).finished();
  const Mat sd_original = s.inverse_transform_target_sd(sd);
  EXPECT_DOUBLE_EQ(sd_original(0, 1), 0.5 * s.target_scale()[0]);
  EXPECT_DOUBLE_EQ(sd_original(1, 0), 2.0 * s.target_scale()[1]);
  const Mat var_original = s.inverse_transform_target_variance(sd.array().square());
  EXPECT_DOUBLE_EQ(var_original(1, 1), std::pow(0.25 * s.target_scale()[1], 2));
  EXPECT_THROW(s.transform_inputs(Mat::Zero(2, 5)), std::invalid_argument);
  EXPECT_THROW(s.inverse_transform_target_sd(Mat::Zero(3, 1)), std::invalid_argument);
}

TEST(Standardizer, IdentityChangesNothing) {
  const Dataset data = make((Mat(2, 3) << 1, 2, 3, 4, 4, 4).finished(), (Mat(1, 3) << 7, 8, 9).finished());
  const Standardizer s = Standardizer::identity(data);  // constant x2 is fine when not standardising
  EXPECT_TRUE(s.is_identity());
  EXPECT_EQ(s.transform_inputs(data.inputs), data.inputs);
  EXPECT_EQ(s.inverse_transform_targets(data.targets), data.targets);
  EXPECT_EQ(s.inverse_transform_target_sd(data.targets), data.targets);
}

TEST(Standardizer, AConstantInputIsKeptWithScaleOneAndNamedAConstantTargetIsAnError) {
  // Naval's gt_compressor_inlet_air_temperature is 288 in every row: the fit must go on.
  const Dataset data = make((Mat(2, 3) << 1, 2, 3, 0.1, 0.1, 0.1).finished(), (Mat(1, 3) << 7, 8, 9).finished());
  const Standardizer s = Standardizer::fit(data);
  EXPECT_EQ(s.constant_inputs(), std::vector<std::string>{"x2"});
  EXPECT_EQ(s.input_scale()[1], 1.0);
  EXPECT_EQ(s.input_mean()[1], 0.1);
  const Mat z = s.transform_inputs(data.inputs);
  EXPECT_TRUE((z.row(1).array() == 0.0).all());
  EXPECT_NEAR(z.row(0).squaredNorm() / 3.0, 1.0, 1e-12);  // the other column is standardised as before
  EXPECT_TRUE(Standardizer::fit(make((Mat(1, 3) << 1, 2, 4).finished(), (Mat(1, 3) << 7, 8, 9).finished())).constant_inputs().empty());
  // Values whose squares overflow are not "constant": the message says what they are.
  try {
    Standardizer::fit(make((Mat(1, 3) << 1e300, -1e300, 5e299).finished(), (Mat(1, 3) << 7, 8, 9).finished()));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("input column 'x1' has values too large to standardise (up to 1e+300)"), std::string::npos)
        << e.what();
  }
  const Dataset constant_target = make((Mat(1, 2) << 1, 2).finished(), (Mat(1, 2) << 5, 5).finished());
  try {
    Standardizer::fit(constant_target);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("target column 'y1' is constant"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Standardizer::fit(make(Mat(1, 0), Mat(1, 0))), std::invalid_argument);
}

TEST(Standardizer, JsonRoundTripIsExact) {
  Rng rng(11);
  Mat x(2, 7), y(1, 7);
  for (Index i = 0; i < x.size(); ++i) x(i) = rng.normal(0.3, 1.7);
  for (Index i = 0; i < y.size(); ++i) y(i) = rng.normal(1e4, 1e3);
  const Standardizer s = Standardizer::fit(make(x, y));
  const nlohmann::json json = s.to_json();
  EXPECT_EQ(json.at("format"), "uqnn.standardizer");
  EXPECT_EQ(json.at("standardize"), true);
  const Standardizer back = Standardizer::from_json(nlohmann::json::parse(json.dump()));
  EXPECT_TRUE(back == s);
  EXPECT_EQ(back.input_mean()[1], s.input_mean()[1]);  // bit-exact through text
  const Standardizer identity = Standardizer::identity({"a"}, {"b"});
  const Standardizer identity_back = Standardizer::from_json(nlohmann::json::parse(identity.to_json().dump()));
  EXPECT_TRUE(identity_back.is_identity());
  EXPECT_TRUE(identity_back == identity);
  EXPECT_FALSE(identity_back == s);
}

TEST(Standardizer, FromJsonErrorsNameTheField) {
  const nlohmann::json good = Standardizer::identity({"a", "b"}, {"y"}).to_json();
  auto error_of = [](const nlohmann::json& json) {
    try {
      Standardizer::from_json(json, "model/standardizer.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json bad = good;
  bad["inputs"]["scale"][1] = 0.0;
  EXPECT_EQ(error_of(bad), "model/standardizer.json: field 'inputs.scale[1]' must be > 0, got 0");
  bad = good;
  bad["targets"]["mean"] = {1.0, 2.0};
  EXPECT_EQ(error_of(bad),
            "model/standardizer.json: field 'targets': 'names', 'mean' and 'scale' must have the same length, got 1, 2 and 1");
  bad = good;
  bad["inputs"].erase("mean");
  EXPECT_EQ(error_of(bad), "model/standardizer.json: field 'inputs.mean' is missing or not an array");
  bad = good;
  bad["inputs"]["mean"][0] = "zero";
  EXPECT_EQ(error_of(bad), "model/standardizer.json: field 'inputs.mean[0]' must be a finite number, got \"zero\"");
  bad = good;
  bad["format"] = "other";
  EXPECT_EQ(error_of(bad), "model/standardizer.json: field 'format' must be \"uqnn.standardizer\"");
  EXPECT_EQ(error_of(nlohmann::json::array()), "model/standardizer.json: expected a JSON object, got array");
}

}  // namespace
}  // namespace uqnn
