// ArviZ InferenceData NetCDF writer: round trip through the netCDF C++ API (read_inference_data),
// and an independent check with Python xarray (skipped with a message when unavailable).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "unit/io/temp_dir.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/netcdf_inference_data.hpp"

namespace uqnn {
namespace {

ParamLayout small_layout() {
  ParamLayout layout;
  layout.add_matrix("layer1.weight", 2, 3, 3);
  layout.add_vector("layer1.bias", 2, 3);
  return layout;
}

// theta entry k of chain c, draw d.
double value(Index c, Index d, Index k) { return 100.0 * c + 10.0 * d + k + 0.25; }

std::vector<Mat> chain_draws(Index C, Index D, Index P) {
  std::vector<Mat> out;
  for (Index c = 0; c < C; ++c) {
    Mat m(D, P);
    for (Index d = 0; d < D; ++d)
      for (Index k = 0; k < P; ++k) m(d, k) = value(c, d, k);
    out.push_back(m);
  }
  return out;
}

InferenceData example(bool flat) {
  const Index C = 2, D = 5;
  const ParamLayout layout = small_layout();
  InferenceData data;
  data.method = "sgld";
  data.created_at = "2024-01-02T03:04:05.000000Z";
  data.attributes["seed"] = "42";
  data.posterior = make_posterior_group(chain_draws(C, D, layout.size()), layout, flat);
  std::vector<std::vector<DrawStats>> stats(C, std::vector<DrawStats>(D));
  for (Index c = 0; c < C; ++c)
    for (Index d = 0; d < D; ++d) {
      auto& s = stats[static_cast<std::size_t>(c)][static_cast<std::size_t>(d)];
      s.lp = -1.5 * d - c;
      s.accept_prob = 1.0;
      s.step_size = 1e-3;
      s.tree_depth = static_cast<int>(d % 3);
      s.n_leapfrog = static_cast<int>(d + 1);
      s.is_divergent = (d == 3 && c == 1);
      s.energy = std::numeric_limits<double>::quiet_NaN();
    }
  data.sample_stats = make_sample_stats_group(stats);
  data.posterior_predictive = make_array_group("y", chain_draws(C, D, 4));
  Mat observed(1, 4);
  observed << 0.5, 1.5, 2.5, 3.5;
  data.observed_data = make_array_group("y", {observed}, true);
  return data;
}

const std::vector<double>& doubles(const NetcdfVariable& v) { return std::get<std::vector<double>>(v.values); }

TEST(NetcdfInferenceData, RoundTripThroughNetcdfApi) {
  testing::TempDir dir;
  const auto path = dir.path() / "idata.nc";
  write_inference_data(path, example(false));
  EXPECT_FALSE(std::filesystem::exists(atomic_temp_path(path)));
  const InferenceData back = read_inference_data(path);
  ASSERT_TRUE(back.posterior && back.sample_stats && back.posterior_predictive && back.observed_data);
  EXPECT_EQ(back.method, "sgld");
  EXPECT_EQ(back.created_at, "2024-01-02T03:04:05.000000Z");
  EXPECT_EQ(back.attributes.at("inference_library"), "uqnn");
  EXPECT_EQ(back.posterior->attributes.at("inference_library"), "uqnn");
  EXPECT_EQ(back.posterior->attributes.at("seed"), "42");

  const NetcdfVariable* chain = back.posterior->find("chain");
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(chain->values), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(back.posterior->find("draw")->values),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  const NetcdfVariable* w = back.posterior->find("layer1.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dims, (std::vector<std::string>{"chain", "draw", "layer1.weight_dim_0", "layer1.weight_dim_1"}));
  EXPECT_EQ(w->shape, (std::vector<Index>{2, 5, 2, 3}));
  // w[c=1, d=4, i=1, j=2] is theta entry k = 1 * 3 + 2 = 5 (row-major block).
  EXPECT_EQ(doubles(*w)[((1 * 5 + 4) * 2 + 1) * 3 + 2], value(1, 4, 5));
  const NetcdfVariable* b = back.posterior->find("layer1.bias");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->shape, (std::vector<Index>{2, 5, 2}));
  EXPECT_EQ(doubles(*b)[(0 * 5 + 2) * 2 + 1], value(0, 2, 7));

  const NetcdfVariable* div = back.sample_stats->find("diverging");
  ASSERT_NE(div, nullptr);
  const auto& flags = std::get<std::vector<bool>>(div->values);
  EXPECT_EQ(std::count(flags.begin(), flags.end(), true), 1);
  EXPECT_TRUE(flags[1 * 5 + 3]);
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(back.sample_stats->find("n_steps")->values)[4], 5);
  EXPECT_EQ(doubles(*back.sample_stats->find("lp"))[1 * 5 + 2], -4.0);
  EXPECT_TRUE(std::isnan(doubles(*back.sample_stats->find("energy"))[0]));
  for (const char* name : {"lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging", "energy"})
    EXPECT_NE(back.sample_stats->find(name), nullptr) << name;
  EXPECT_EQ(back.observed_data->find("y")->shape, (std::vector<Index>{4}));
  EXPECT_EQ(doubles(*back.observed_data->find("y"))[2], 2.5);
  EXPECT_EQ(back.posterior_predictive->find("y")->shape, (std::vector<Index>{2, 5, 4}));
}

TEST(NetcdfInferenceData, FlatThetaWithNameCoordinate) {
  testing::TempDir dir;
  const auto path = dir.path() / "flat.nc";
  write_inference_data(path, example(true));
  const InferenceData back = read_inference_data(path);
  const NetcdfVariable* param = back.posterior->find("param");
  ASSERT_NE(param, nullptr);
  EXPECT_EQ(std::get<std::vector<std::string>>(param->values), small_layout().names());
  const NetcdfVariable* theta = back.posterior->find("theta");
  ASSERT_NE(theta, nullptr);
  EXPECT_EQ(theta->shape, (std::vector<Index>{2, 5, 8}));
  EXPECT_EQ(doubles(*theta)[(1 * 5 + 3) * 8 + 6], value(1, 3, 6));
}

TEST(NetcdfInferenceData, ErrorsAndAtomicity) {
  testing::TempDir dir;
  const auto missing = dir.path() / "no_such_dir" / "x.nc";
  EXPECT_THROW(write_inference_data(missing, example(false)), InputError);
  EXPECT_FALSE(std::filesystem::exists(atomic_temp_path(missing)));
  EXPECT_THROW(read_inference_data(dir.path() / "absent.nc"), InputError);
  // An inconsistent group is rejected before anything is written; an existing file survives.
  const auto path = dir.path() / "keep.nc";
  write_inference_data(path, example(false));
  const auto before = std::filesystem::file_size(path);
  InferenceData bad = example(false);
  bad.posterior->variables[0].shape[1] = 6;  // draw 6 here, 5 in the coordinate
  EXPECT_THROW(write_inference_data(path, bad), std::invalid_argument);
  EXPECT_EQ(std::filesystem::file_size(path), before);
  EXPECT_EQ(read_inference_data(path).posterior->find("layer1.weight")->shape[1], 5);
}

/// A Python interpreter with xarray and netCDF4, or empty.
std::string python_with_xarray() {
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string command = std::string(candidate) + " -c \"import xarray, netCDF4\" > /dev/null 2>&1";
    if (std::system(command.c_str()) == 0) return candidate;
  }
  return {};
}

TEST(NetcdfInferenceData, XarrayReadsEveryGroup) {
  const std::string python = python_with_xarray();
  if (python.empty()) GTEST_SKIP() << "no python3 with xarray and netCDF4 (apt-get install python3-xarray python3-netcdf4)";
  testing::TempDir dir;
  const auto path = dir.path() / "idata.nc";
  const auto flat_path = dir.path() / "flat.nc";
  write_inference_data(path, example(false));
  write_inference_data(flat_path, example(true));
  const auto script = dir.write("check.py", R"PY(
import sys, math
import numpy as np
import xarray as xr
path, flat_path = sys.argv[1], sys.argv[2]
def value(c, d, k): return 100.0 * c + 10.0 * d + k + 0.25
post = xr.open_dataset(path, group="posterior")
assert dict(post.sizes) == {"chain": 2, "draw": 5, "layer1.weight_dim_0": 2, "layer1.weight_dim_1": 3, "layer1.bias_dim_0": 2}, dict(post.sizes)
assert set(post.data_vars) == {"layer1.weight", "layer1.bias"}, list(post.data_vars)
assert post["layer1.weight"].dims == ("chain", "draw", "layer1.weight_dim_0", "layer1.weight_dim_1")
assert post.chain.values.tolist() == [0, 1] and post.chain.dtype == np.int64
assert post.draw.values.tolist() == [0, 1, 2, 3, 4]
assert float(post["layer1.weight"].sel(chain=1, draw=4).values[1, 2]) == value(1, 4, 5)
assert float(post["layer1.bias"].values[0, 2, 1]) == value(0, 2, 7)
assert post.attrs["inference_library"] == "uqnn" and post.attrs["method"] == "sgld"
assert post.attrs["created_at"] == "2024-01-02T03:04:05.000000Z"
st = xr.open_dataset(path, group="sample_stats")
assert set(st.data_vars) == {"lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging", "energy"}
assert st.diverging.dtype == bool, st.diverging.dtype
assert int(st.diverging.sum()) == 1 and bool(st.diverging.values[1, 3])
assert st.n_steps.dtype == np.int64 and st.n_steps.values[0].tolist() == [1, 2, 3, 4, 5]
assert st.lp.values[1, 2] == -4.0 and st.lp.dims == ("chain", "draw")
assert np.isnan(st.energy.values).all()
pp = xr.open_dataset(path, group="posterior_predictive")
assert pp.y.dims == ("chain", "draw", "y_dim_0") and pp.y.shape == (2, 5, 4)
obs = xr.open_dataset(path, group="observed_data")
assert obs.y.values.tolist() == [0.5, 1.5, 2.5, 3.5]
flat = xr.open_dataset(flat_path, group="posterior")
names = ["layer1.weight[0,0]", "layer1.weight[0,1]", "layer1.weight[0,2]", "layer1.weight[1,0]",
         "layer1.weight[1,1]", "layer1.weight[1,2]", "layer1.bias[0]", "layer1.bias[1]"]
assert flat.param.values.tolist() == names, flat.param.values.tolist()
assert float(flat.theta.sel(chain=1, draw=3, param="layer1.bias[0]")) == value(1, 3, 6)
try:
    import arviz as az
    idata = az.from_netcdf(path)
    assert set(idata.groups()) >= {"posterior", "sample_stats", "posterior_predictive", "observed_data"}
    print("arviz ok")
except ImportError:
    print("arviz not installed; xarray checks only")
print("OK")
)PY");
  const std::string command = python + " " + script.string() + " " + path.string() + " " + flat_path.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("OK"), std::string::npos) << output;
  std::printf("%s", output.c_str());
}

}  // namespace
}  // namespace uqnn
