// uqnn._core: the Python module's compiled half, a thin layer over src/services (as the CLI is):
// fits (run_fit), fitted runs (FittedModel), sampling any log density (sample), the option
// declarations (for keyword checking and docstrings) and the ArviZ summary. The pure-Python
// package (python/uqnn/*.py) builds the estimator API on these.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/services/analysis.hpp"
#include "uqnn/services/conformal.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/evaluate.hpp"
#include "uqnn/services/fitted_model.hpp"
#include "uqnn/services/methods.hpp"
#include "uqnn/services/network.hpp"
#include "uqnn/services/ood_metrics.hpp"
#include "uqnn/services/sample.hpp"
#include "uqnn/services/vocabulary.hpp"

namespace py = pybind11;
using namespace uqnn;

namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

/// A Python value (None, bool, int, float, str, sequence, dict) as JSON, for option values.
nlohmann::json to_json(py::handle h) {
  if (h.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) return h.cast<long long>();
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  if (py::isinstance<py::dict>(h)) {
    nlohmann::json j = nlohmann::json::object();
    for (auto item : h.cast<py::dict>()) j[py::str(item.first).cast<std::string>()] = to_json(item.second);
    return j;
  }
  if (py::hasattr(h, "item") && py::hasattr(h, "dtype") && py::len(h.attr("shape")) == 0) return to_json(h.attr("item")());
  if (py::isinstance<py::sequence>(h)) {
    nlohmann::json j = nlohmann::json::array();
    for (auto item : h.cast<py::sequence>()) j.push_back(to_json(item));
    return j;
  }
  throw InputError("cannot use a value of type " + py::str(py::type::of(h).attr("__name__")).cast<std::string>() + " as an option");
}

py::object to_python(const nlohmann::json& j) {
  if (j.is_null()) return py::none();
  if (j.is_boolean()) return py::bool_(j.get<bool>());
  if (j.is_number_integer()) return py::int_(j.get<long long>());
  if (j.is_number()) return py::float_(j.get<double>());
  if (j.is_string()) return py::str(j.get<std::string>());
  if (j.is_array()) {
    py::list l;
    for (const auto& v : j) l.append(to_python(v));
    return l;
  }
  py::dict d;
  for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
  return d;
}

/// [n, d] C-order NumPy rows as the library's [d, n] columns (one copy).
Mat columns_of(const CArray& a, const char* what) {
  if (a.ndim() != 2) throw InputError(std::string(what) + " must be a 2-D array of shape (n, columns)");
  return Eigen::Map<const Mat>(a.data(), a.shape(1), a.shape(0));
}

py::array_t<double> rows_of(const Mat& m) {  // [d, n] -> (n, d)
  py::array_t<double> out({m.cols(), m.rows()});
  Eigen::Map<Mat>(out.mutable_data(), m.rows(), m.cols()) = m;
  return out;
}

/// The draws as (S, K), chain after chain (draws.csv's rows); `map`, when given, turns each theta
/// into the row stored.
py::array_t<double> draws_array(const Draws& draws, const std::function<Vec(const Vec&)>& map = {}) {
  if (draws.empty()) return py::array_t<double>(std::vector<Index>{0, 0});
  const Index K = map ? map(draws.draw(0)).size() : draws.dim();
  py::array_t<double> out({draws.size(), K});
  auto r = out.mutable_unchecked<2>();
  draws.for_each([&](Index s, const Vec& theta) {
    const Vec row = map ? map(theta) : theta;
    for (Index k = 0; k < K; ++k) r(s, k) = row[k];
  });
  return out;
}

py::list option_groups_list(const std::vector<OptionGroup>& groups) {
  static const char* type_names[] = {"flag", "integer", "real", "text", "choice", "integer list", "text list", "path"};
  py::list out;
  for (const auto& g : groups) {
    py::list options;
    for (const auto& o : g.options)
      options.append(py::dict(py::arg("name") = o.name, py::arg("type") = type_names[static_cast<int>(o.type)],
                              py::arg("default") = to_python(o.default_value), py::arg("valid") = o.valid_values(),
                              py::arg("help") = o.help, py::arg("reference") = o.reference, py::arg("flag") = o.flag(),
                              // read only when option only_when_option has one of these values ("" = always)
                              py::arg("only_when_option") = o.only_when_option, py::arg("only_when_values") = o.only_when_values));
    out.append(py::dict(py::arg("name") = g.name, py::arg("title") = g.title, py::arg("options") = options));
  }
  return out;
}

/// A fit's messages and progress, collected from the worker threads and handed to Python on the
/// main thread by run_interruptible (Python code runs there, with the GIL: tqdm and logging
/// handlers need not be thread safe). `sink` is a uqnn._common.Reporter.
class PythonReporter : public Reporter {
 public:
  explicit PythonReporter(py::object sink) : sink_(std::move(sink)) {}
  void message(MessageLevel level, const std::string& text) override {
    std::lock_guard lock(mutex_);
    messages_.emplace_back(level, text);
  }
  void progress(const Progress& p) override {
    std::lock_guard lock(mutex_);
    // Only the latest update of a task matters, but a finished task is never overwritten by the next.
    if (!pending_.empty() && !pending_.back().finished && pending_.back().task == p.task) pending_.back() = p;
    else pending_.push_back(p);
  }
  /// With the GIL held.
  void deliver() {
    std::vector<std::pair<MessageLevel, std::string>> messages;
    std::vector<Progress> updates;
    {
      std::lock_guard lock(mutex_);
      messages.swap(messages_);
      updates.swap(pending_);
    }
    for (const auto& [level, text] : messages) sink_.attr("message")(level == MessageLevel::Warning ? "warning" : "info", text);
    for (const Progress& p : updates)
      sink_.attr("progress")(py::dict(py::arg("task") = p.task, py::arg("done") = p.done, py::arg("total") = p.total,
                                      py::arg("divergences") = p.divergences, py::arg("elapsed") = p.elapsed_seconds,
                                      py::arg("detail") = p.detail, py::arg("finished") = p.finished,
                                      py::arg("interrupted") = p.interrupted));
  }

 private:
  py::object sink_;
  std::mutex mutex_;
  std::vector<std::pair<MessageLevel, std::string>> messages_;
  std::vector<Progress> pending_;
};

/// Runs `work` without the GIL on a worker thread while this thread, holding the GIL now and then,
/// checks for Ctrl-C (Python's signal handler only runs on the main thread): on KeyboardInterrupt
/// the run is asked to stop, keeps what it drew, and `interrupted` is set. It also passes the
/// reporter's messages and progress to Python.
template <typename Work>
void run_interruptible(Work work, bool& interrupted, PythonReporter* reporter) {
  std::exception_ptr failure;
  std::atomic<bool> done{false};
  {
    py::gil_scoped_release release;
    std::thread worker([&] {
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
      done = true;
    });
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {
        PyErr_Clear();
        interrupted = true;
        request_stop();
      }
      if (reporter) reporter->deliver();
    }
    worker.join();
  }
  if (reporter) reporter->deliver();
  if (failure) std::rethrow_exception(failure);
}

/// A log density given as a Python callable x -> (log p, gradient); called with the GIL held.
class PythonLogDensity : public LogDensity {
 public:
  PythonLogDensity(py::function f, Index dim) : f_(std::move(f)), dim_(dim) {}
  Index dim() const override { return dim_; }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override {
    py::gil_scoped_acquire acquire;
    py::array_t<double> x(dim_);
    std::copy(theta.data(), theta.data() + dim_, x.mutable_data());
    py::object r = f_(x);
    auto pair = r.cast<py::tuple>();
    if (pair.size() != 2) throw InputError("the log density must return (value, gradient)");
    const double lp = pair[0].cast<double>();
    auto g = pair[1].cast<CArray>();
    if (g.size() != dim_) throw InputError("the log density's gradient has " + std::to_string(g.size()) + " entries, expected " + std::to_string(dim_));
    grad = Eigen::Map<const Vec>(g.data(), dim_);
    return lp;
  }

 private:
  py::function f_;
  Index dim_;
};

/// The C callback nutpie and walnutpie take: int(size_t n, const double* x, double* grad, double* lp,
/// void* data), returning 0 on success. Called without the GIL, from several chains at once.
class CallbackLogDensity : public LogDensity {
 public:
  using Fn = int (*)(std::size_t, const double*, double*, double*, void*);
  CallbackLogDensity(Fn fn, void* data, Index dim) : fn_(fn), data_(data), dim_(dim) {}
  Index dim() const override { return dim_; }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override {
    grad.resize(dim_);
    double lp = 0;
    const int status = fn_(static_cast<std::size_t>(dim_), theta.data(), grad.data(), &lp, data_);
    // A non-zero status is a point outside the support: a rejected proposal, not a crash.
    return status == 0 ? lp : -std::numeric_limits<double>::infinity();
  }

 private:
  Fn fn_;
  void* data_;
  Index dim_;
};

/// A Python object that may be released on any thread: its last owner takes the GIL to drop it
/// (and leaves it alone once the interpreter has finalised).
std::shared_ptr<py::object> shared_python(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire acquire;
      delete p;
    } else {
      p->release();
      delete p;
    }
  });
}

/// [rows, cols] column-major memory as a (cols, rows) C-order NumPy array without a copy; valid while
/// `m` lives (the callee must not keep it).
py::array_t<double> rows_view(const Mat& m) {
  return py::array_t<double>({m.cols(), m.rows()}, {static_cast<py::ssize_t>(sizeof(double) * m.rows()), static_cast<py::ssize_t>(sizeof(double))},
                             m.data(), py::capsule(m.data(), [](void*) {}));
}
py::array_t<double> vector_view(const Vec& v) { return py::array_t<double>({v.size()}, {static_cast<py::ssize_t>(sizeof(double))}, v.data(), py::capsule(v.data(), [](void*) {})); }

/// A (n, k) array from Python as [k, n] columns; InputError naming `what` unless its shape is (n, k).
Mat columns_from(const py::handle& h, Index k, Index n, const std::string& what) {
  const auto a = py::cast<CArray>(h);
  if (a.ndim() != 2 || a.shape(0) != n || a.shape(1) != k)
    throw InputError(fmt::format("{}: expected shape ({}, {}), got {}", what, n, k, py::str(py::tuple(a.attr("shape"))).cast<std::string>()));
  return Eigen::Map<const Mat>(a.data(), k, n);
}
Vec vector_from(const py::handle& h, Index k, const std::string& what) {
  const auto a = py::cast<CArray>(h);
  if (a.ndim() != 1 || a.shape(0) != k) throw InputError(fmt::format("{}: expected {} values, got shape {}", what, k, py::str(py::tuple(a.attr("shape"))).cast<std::string>()));
  return Eigen::Map<const Vec>(a.data(), k);
}

/// An ExternalNetwork (nn/external_model.hpp) whose functions are the methods of a Python object
/// (uqnn._torch_model.TorchNetwork): forward(theta, X), pullback(theta, X, cotangent),
/// jvp(theta, v, X), weighted_hvp(theta, v, X, G), jacobian(theta, X), reinitialise(seed). X and
/// outputs are (n, columns) rows. Each call takes the GIL, so chains in parallel call it one at a time.
std::shared_ptr<ExternalNetwork> python_network(const py::object& net) {
  auto n = std::make_shared<ExternalNetwork>();
  n->id = net.attr("id").cast<std::string>();
  n->description = net.attr("description").cast<std::string>();
  n->input_dim = net.attr("input_dim").cast<Index>();
  n->output_dim = net.attr("output_dim").cast<Index>();
  for (auto b : net.attr("blocks")) {
    const auto t = b.cast<py::tuple>();
    const auto name = t[0].cast<std::string>();
    const auto rows = t[1].cast<Index>(), cols = t[2].cast<Index>(), fan_in = t[3].cast<Index>();
    if (cols == 1) n->layout.add_vector(name, rows, fan_in);
    else n->layout.add_matrix(name, rows, cols, fan_in);
  }
  const Index P = n->layout.size(), in = n->input_dim, out = n->output_dim;
  n->initial = vector_from(net.attr("initial"), P, "initial parameters");
  const auto self = shared_python(net);
  const std::string what = n->description;
  if (!net.attr("can_reinitialise").cast<bool>()) n->reinitialise = nullptr;
  else
    n->reinitialise = [self, P, what](std::uint64_t seed) {
      py::gil_scoped_acquire acquire;
      return vector_from(self->attr("reinitialise")(seed), P, what + ": reinitialise");
    };
  n->forward = [self, out, in, what](const Vec& theta, const Mat& X) {
    py::gil_scoped_acquire acquire;
    (void)in;
    return columns_from(self->attr("forward")(vector_view(theta), rows_view(X)), out, X.cols(), what + ": outputs");
  };
  n->pullback = [self, out, P, what](const Vec& theta, const Mat& X, const std::function<Mat(const Mat&)>& cotangent) {
    py::gil_scoped_acquire acquire;
    const Index N = X.cols();
    py::cpp_function python_cotangent([&](const CArray& Y) {
      const Mat y = Eigen::Map<const Mat>(Y.data(), out, N);
      const Mat dY = cotangent(y);
      return rows_of(dY);
    });
    return vector_from(self->attr("pullback")(vector_view(theta), rows_view(X), python_cotangent), P, what + ": gradient");
  };
  n->jvp = [self, out, what](const Vec& theta, const Vec& v, const Mat& X) {
    py::gil_scoped_acquire acquire;
    return columns_from(self->attr("jvp")(vector_view(theta), vector_view(v), rows_view(X)), out, X.cols(), what + ": Jacobian-vector product");
  };
  n->weighted_hvp = [self, P, what](const Vec& theta, const Vec& v, const Mat& X, const Mat& G) {
    py::gil_scoped_acquire acquire;
    return vector_from(self->attr("weighted_hvp")(vector_view(theta), vector_view(v), rows_view(X), rows_view(G)), P,
                       what + ": Hessian-vector product");
  };
  n->jacobian = [self, out, P, what](const Vec& theta, const Mat& X) {
    py::gil_scoped_acquire acquire;
    const auto a = py::cast<CArray>(self->attr("jacobian")(vector_view(theta), rows_view(X)));
    if (a.ndim() != 2 || a.shape(0) != X.cols() * out || a.shape(1) != P)
      throw InputError(fmt::format("{}: its Jacobian must be ({}, {})", what, X.cols() * out, P));
    return Mat(Eigen::Map<const RowMajor>(a.data(), a.shape(0), a.shape(1)));
  };
  return n;
}

py::dict sample_result(const SampleResult& r) {
  const int C = r.run.num_chains();
  const Index D = r.run.min_draws(), K = r.run.dim();
  py::array_t<double> draws({static_cast<Index>(C), D, K});
  auto d = draws.mutable_unchecked<3>();
  py::dict stats;
  const std::vector<std::pair<const char*, std::function<double(const DrawStats&)>>> fields = {
      {"lp", [](const DrawStats& s) { return s.lp; }},
      {"acceptance_rate", [](const DrawStats& s) { return s.accept_prob; }},
      {"step_size", [](const DrawStats& s) { return s.step_size; }},
      {"tree_depth", [](const DrawStats& s) { return static_cast<double>(s.tree_depth); }},
      {"n_steps", [](const DrawStats& s) { return static_cast<double>(s.n_leapfrog); }},
      {"diverging", [](const DrawStats& s) { return s.is_divergent ? 1.0 : 0.0; }},
      {"energy", [](const DrawStats& s) { return s.energy; }}};
  for (int c = 0; c < C; ++c)
    for (Index i = 0; i < D; ++i)
      for (Index k = 0; k < K; ++k) d(c, i, k) = r.run.draws[static_cast<std::size_t>(c)](i, k);
  for (const auto& [name, field] : fields) {
    py::array_t<double> a({static_cast<Index>(C), D});
    auto v = a.mutable_unchecked<2>();
    for (int c = 0; c < C; ++c)
      for (Index i = 0; i < D; ++i) v(c, i) = field(r.run.stats[static_cast<std::size_t>(c)][static_cast<std::size_t>(i)]);
    stats[name] = a;
  }
  return py::dict(py::arg("draws") = draws, py::arg("sample_stats") = stats, py::arg("settings") = to_python(r.settings),
                  py::arg("seconds") = r.run.seconds);
}

std::vector<GivenOption> given_options(const py::dict& options) {
  std::vector<GivenOption> given;
  for (auto item : options) {
    const std::string name = py::str(item.first);
    given.push_back({name, to_json(item.second), name});
  }
  return given;
}

/// uqnn.sample's run: one start for every chain (a vector) or one per chain (chains, dim).
py::tuple run_sample(std::shared_ptr<const LogDensity> density, const CArray& init, const std::string& method, const py::dict& options,
                     py::object sink) {
  if (init.ndim() != 1 && init.ndim() != 2) throw InputError("init must be a vector or a (chains, dim) array");
  const Index dim = density->dim();
  InitialPoints initial;
  if (init.ndim() == 1) {
    initial = Vec(Eigen::Map<const Vec>(init.data(), dim));
  } else {
    std::vector<Vec> points;
    for (Index c = 0; c < init.shape(0); ++c) points.emplace_back(Eigen::Map<const Vec>(init.data() + c * dim, dim));
    initial = points;
  }
  SampleResult r;
  bool interrupted = false;
  const auto reporter = std::make_shared<PythonReporter>(sink);
  const auto given = given_options(options);
  run_interruptible([&] { r = sample(density, initial, method, given, reporter); }, interrupted, reporter.get());
  return py::make_tuple(sample_result(r), interrupted || r.run.interrupted);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "uqnn's compiled core (use the `uqnn` package, not this module)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def("method_names", &method_names, "every --method of `uqnn fit`");
  // Every closed set of names (methods, priors, activations, ...) as JSON: the package's docstrings
  // and checks are built from it (services/vocabulary.hpp).
  m.def("vocabulary", [] { return vocabulary().dump(); });
  m.def("sample_method_names", &sample_method_names, "the methods uqnn.sample runs on a log density");
  m.def("fit_option_groups", [](const std::string& method) { return option_groups_list(fit_option_groups(method)); });
  // Every option declared (the fit's own groups first, then each method family's once): the
  // estimators' keyword defaults (hidden, activation, method, ...) are read from these.
  m.def("all_option_groups", [] { return option_groups_list(all_option_groups()); });
  m.def("sample_option_groups", [](const std::string& method) { return option_groups_list(sample_option_groups(method)); });

  m.def("check_fit_options", [](const py::dict& options) {
    FitRequest request;
    request.given = given_options(options);
    (void)make_fit_config(request);
  });
  m.def(
      "fit",
      [](const py::dict& options, const CArray& X, const CArray& y, std::vector<std::string> input_names,
         std::vector<std::string> target_names, std::optional<CArray> start, py::object sink, bool resume, std::optional<CArray> ood_X,
         std::optional<std::string> network_id) {
        FitRequest request;
        request.given = given_options(options);
        request.invocation = {{"python", to_json(options)}};
        FitConfig cfg = make_fit_config(request);
        cfg.resume = resume;  // run_fit checks that the checkpoint in `out` is this fit's
        if (start) cfg.start = Vec(Eigen::Map<const Vec>(start->data(), start->size()));
        if (network_id) {
          cfg.external_network = find_external_network(*network_id);
          if (!cfg.external_network) throw InputError("no network registered as " + *network_id);
        }
        Dataset data;
        data.inputs = columns_of(X, "X");
        data.targets = columns_of(y, "y");
        if (data.targets.cols() != data.inputs.cols())
          throw InputError("X has " + std::to_string(data.inputs.cols()) + " rows but y has " + std::to_string(data.targets.cols()));
        data.input_names = std::move(input_names);
        data.target_names = std::move(target_names);
        data.source = "Python arrays";
        cfg.data.dataset = std::move(data);
        if (ood_X) cfg.data.ood_inputs = columns_of(*ood_X, "ood_X");
        FitReport report;
        bool interrupted = false;
        const auto reporter = std::make_shared<PythonReporter>(sink);
        cfg.reporter = reporter;
        run_interruptible([&] { report = run_fit(cfg); }, interrupted, reporter.get());
        return py::make_tuple(to_python(report.metrics), interrupted);
      },
      py::arg("options"), py::arg("X"), py::arg("y"), py::arg("input_names"), py::arg("target_names"), py::arg("start"), py::arg("reporter"),
      py::arg("resume") = false, py::arg("ood_X") = py::none(), py::arg("network_id") = py::none());
  // A network uqnn evaluates through Python (uqnn._torch_model.TorchNetwork): registered under its
  // id, which fit(network_id=...) and saved runs' model.json ({"kind": "external"}) refer to.
  m.def("register_network", [](const py::object& net, std::optional<py::dict> init_options) {
    auto n = python_network(net);
    if (init_options) {  // start like the network these fit options build (a module uqnn can also translate)
      FitRequest request;
      request.given = given_options(*init_options);
      n->initialiser = build_model(make_fit_config(request).model, n->input_dim, n->output_dim);
    }
    const std::string id = n->id;
    register_external_network(std::move(n));
    return id;
  }, py::arg("network"), py::arg("init_options") = py::none());

  m.def(
      "sample_python",
      [](py::function logp_and_grad, const CArray& init, const std::string& method, const py::dict& options, py::object sink) {
        const Index dim = init.shape(init.ndim() - 1);
        auto density = std::make_shared<PythonLogDensity>(logp_and_grad, dim);
        return run_sample(density, init, method, options, sink);
      });
  m.def(
      "sample_callback",
      [](std::uintptr_t fn, std::uintptr_t data, const CArray& init, const std::string& method, const py::dict& options,
         py::object sink) {
        const Index dim = init.shape(init.ndim() - 1);
        auto density = std::make_shared<CallbackLogDensity>(reinterpret_cast<CallbackLogDensity::Fn>(fn), reinterpret_cast<void*>(data), dim);
        return run_sample(density, init, method, options, sink);
      });

  // The Mushroom-style contextual bandit (predictive/thompson_sampling.hpp): one agent, one reward
  // pattern; uqnn.thompson_bandit builds the keyword interface on it.
  m.def(
      "thompson_bandit",
      [](const CArray& contexts, const std::vector<bool>& edible, const py::dict& keywords) {
        if (contexts.ndim() != 2) throw InputError("contexts must be a 2-D array (mushrooms, features)");
        MushroomBandit bandit;
        bandit.contexts = Eigen::Map<const RowMajor>(contexts.data(), contexts.shape(0), contexts.shape(1)).transpose();
        bandit.edible = edible;
        if (static_cast<Index>(edible.size()) != bandit.contexts.cols())
          throw InputError("edible has " + std::to_string(edible.size()) + " entries, contexts " + std::to_string(bandit.contexts.cols()) + " rows");
        BanditExperiment e;
        bandit.poison_probability = keywords["poison_probability"].cast<double>();
        e.agent.kind = keywords["agent"].cast<std::string>();
        e.agent.batch_size = keywords["batch_size"].cast<Index>();
        e.agent.members = keywords["members"].cast<Index>();
        e.agent.sg_step_size = keywords["sg_step_size"].cast<double>();
        e.agent.adam_learning_rate = keywords["adam_learning_rate"].cast<double>();
        e.agent.reward_scale = keywords["reward_scale"].cast<double>();
        e.agent.noise_sd = keywords["noise_sd"].cast<double>();
        e.agent.fsgld_weight_prior = keywords["fsgld_weight_prior"].cast<bool>();
        e.run.rounds = keywords["rounds"].cast<Index>();
        e.run.updates_per_round = keywords["updates_per_round"].cast<Index>();
        e.run.buffer_capacity = keywords["buffer_size"].cast<Index>();
        e.hidden = keywords["hidden"].cast<std::vector<Index>>();
        e.seed = keywords["seed"].cast<std::uint64_t>();
        BanditTrace trace;
        bool interrupted = false;
        run_interruptible(
            [&] { trace = run_mushroom_bandit(bandit, e); },
            interrupted, nullptr);
        py::dict out;
        out["cumulative_regret"] = py::array_t<double>(static_cast<py::ssize_t>(trace.cumulative_regret.size()), trace.cumulative_regret.data());
        out["cumulative_reward"] = py::array_t<double>(static_cast<py::ssize_t>(trace.cumulative_reward.size()), trace.cumulative_reward.data());
        out["actions"] = py::array_t<int>(static_cast<py::ssize_t>(trace.actions.size()), trace.actions.data());
        out["eaten_poisonous"] = trace.eaten_poisonous;
        out["rejected_edible"] = trace.rejected_edible;
        out["divergences"] = trace.divergences;
        out["interrupted"] = trace.interrupted || interrupted;
        out["agent_prior"] = trace.agent_prior;
        out["final_weight_norm"] = trace.final_parameter_norm;
        return out;
      });

  m.def(
      "summarize",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& draws, const std::vector<std::string>& names,
         double hdi_prob) {
        // draws: (chains, draws, K) -> one az.summary row per column.
        if (draws.ndim() != 3) throw InputError("draws must be (chains, draws, parameters)");
        const Index C = draws.shape(0), D = draws.shape(1), K = draws.shape(2);
        auto r = draws.unchecked<3>();
        DrawsTable table;
        for (Index k = 0; k < K; ++k) {
          Mat q(D, C);
          for (Index c = 0; c < C; ++c)
            for (Index i = 0; i < D; ++i) q(i, c) = r(c, i, k);
          table.names.push_back(k < static_cast<Index>(names.size()) ? names[static_cast<std::size_t>(k)] : std::to_string(k));
          table.draws.push_back(std::move(q));
        }
        py::list rows;
        for (const auto& s : summarize_draws(table, hdi_prob))
          rows.append(py::make_tuple(s.name, s.mean, s.sd, s.hdi_lower, s.hdi_upper, s.mcse_mean, s.mcse_sd, s.ess_bulk, s.ess_tail, s.r_hat));
        return rows;
      },
      py::arg("draws"), py::arg("names"), py::arg("hdi_prob") = 0.94);

  m.def(
      "classification_metrics",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& probabilities,
         const py::array_t<double, py::array::c_style | py::array::forcecast>& targets, bool categorical) {
        // probabilities: (rows, classes or outputs); targets: (rows, 1 or outputs). Columns are rows in C++.
        if (probabilities.ndim() != 2 || targets.ndim() != 2 || probabilities.shape(0) != targets.shape(0))
          throw InputError("probabilities and targets must be (rows, columns) with the same rows");
        const auto to_mat = [](const py::array_t<double, py::array::c_style | py::array::forcecast>& a) {
          return Mat(Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(a.data(), a.shape(0), a.shape(1)).transpose());
        };
        const ClassificationMetrics m = evaluate_classification(to_mat(probabilities), to_mat(targets), categorical);
        py::dict d;
        d["n"] = m.n;
        d["accuracy"] = m.accuracy;
        d["nll"] = m.nll;
        d["lppd"] = -m.nll;
        d["brier"] = m.brier;
        d["ece"] = m.ece;
        return d;
      },
      "accuracy, NLL, LPPD, Brier score and ECE (15 bins) of predictive class probabilities");

  // uqnn.evaluate (python/uqnn/_evaluate.py): `uqnn evaluate`'s service with the same settings.
  m.def("evaluate", [](const py::dict& o) {
    EvaluateConfig c;
    const auto path = [&](const char* key) { return o.contains(key) && !o[key].is_none() ? o[key].cast<std::filesystem::path>() : std::filesystem::path(); };
    c.model_dir = path("model");
    c.predictions = path("predictions");
    c.data = path("data");
    c.ood_data = path("ood_data");
    c.ood_predictions = path("ood_predictions");
    c.calibration_data = path("calibration_data");
    c.out = path("out");
    if (o.contains("target")) c.target = o["target"].cast<std::string>();
    if (o.contains("levels")) c.levels = o["levels"].cast<std::vector<double>>();
    if (o.contains("bins")) c.bins = o["bins"].cast<int>();
    if (o.contains("conformal") && !o["conformal"].is_none()) c.conformal = o["conformal"].cast<std::string>();
    if (o.contains("calibration_fraction") && !o["calibration_fraction"].is_none()) c.calibration_fraction = o["calibration_fraction"].cast<double>();
    if (o.contains("raps_lambda")) c.raps_lambda = o["raps_lambda"].cast<double>();
    if (o.contains("raps_k_reg")) c.raps_k_reg = o["raps_k_reg"].cast<Index>();
    if (o.contains("seed")) c.seed = o["seed"].cast<std::uint64_t>();
    if (o.contains("figures")) c.figures = o["figures"].cast<bool>();
    EvaluateReport r;
    {
      py::gil_scoped_release release;
      r = run_evaluate(c);
    }
    std::vector<std::string> files;
    for (const auto& f : r.files) files.push_back(f.string());
    return py::make_tuple(to_python(r.metrics), files, r.figure_warnings);
  });

  m.def("read_sample_stats", [](const std::filesystem::path& path) {
    // The sample_stats group of a run's posterior.nc (uqnn's own reader: no netCDF Python package needed).
    const std::optional<InferenceGroup> sample_stats = read_sample_stats(path);
    py::dict out;
    if (!sample_stats) return out;
    for (const NetcdfVariable& v : sample_stats->variables) {
      std::vector<py::ssize_t> shape(v.shape.begin(), v.shape.end());
      std::visit(
          [&](const auto& values) {
            using T = typename std::decay_t<decltype(values)>::value_type;
            if constexpr (std::is_same_v<T, std::string>) return;
            else {
              py::array_t<std::conditional_t<std::is_same_v<T, bool>, bool, T>> a(shape);
              std::copy(values.begin(), values.end(), a.mutable_data());
              out[py::str(v.name)] = a;
            }
          },
          v.values);
    }
    return out;
  });

  // A network on its own (any model.json description): outputs, the gradient of sum(G .* f) and
  // Hessian-vector products, for checking uqnn's layers against PyTorch's (python/tests/test_cnn.py)
  // and for uqnn.from_torch's translations. X is (n, input_dim) rows, outputs (n, output_dim).
  m.def(
      "cnn_description",
      [](const std::string& layers, const std::vector<Index>& input_shape, Index output_dim, const std::string& activation,
         const std::string& init) { return to_python(cnn_description(layers, input_shape, output_dim, activation, init)); },
      py::arg("layers"), py::arg("input_shape"), py::arg("output_dim"), py::arg("activation") = "relu", py::arg("init") = "auto",
      "the model.json description of a cnn from a layer list (docs/networks.md)");
  const auto vector_of = [](const CArray& a, const char* what) {
    if (a.ndim() != 1) throw InputError(std::string(what) + " must be a vector");
    return Vec(Eigen::Map<const Vec>(a.data(), a.size()));
  };
  py::class_<Network>(m, "Model")
      .def(py::init([](const py::dict& description) { return Network(to_json(description)); }))
      .def_property_readonly("kind", &Network::kind)
      .def_property_readonly("num_params", &Network::num_params)
      .def_property_readonly("input_dim", &Network::input_dim)
      .def_property_readonly("output_dim", &Network::output_dim)
      .def_property_readonly("param_names", [](const Network& n) { return n.layout().names(); })
      .def_property_readonly("param_blocks",
                             [](const Network& n) {
                               py::list blocks;  // (name, offset, rows, cols) in theta order
                               for (const ParamBlock& b : n.layout().blocks()) blocks.append(py::make_tuple(b.name, b.offset, b.rows, b.cols));
                               return blocks;
                             })
      .def_property_readonly("description", [](const Network& n) { return to_python(n.description()); })
      .def("set_precision", &Network::set_precision)
      .def("initial_params",
           [](const Network& n, std::uint64_t seed) {
             const Vec theta = n.initial_params(seed);
             return py::array_t<double>(theta.size(), theta.data());
           })
      .def("forward",
           [vector_of](const Network& n, const CArray& theta, const CArray& X) {
             const Vec t = vector_of(theta, "theta");
             const Mat x = columns_of(X, "X");
             Mat y;
             {
               py::gil_scoped_release release;
               y = n.forward(t, x);
             }
             return rows_of(y);
           })
      .def(
          "value_and_gradient",
          [vector_of](const Network& n, const CArray& theta, const CArray& X, const CArray& G) {
            const Vec t = vector_of(theta, "theta");
            const Mat x = columns_of(X, "X"), g = columns_of(G, "G");
            Vec grad;
            double value = 0.0;
            {
              py::gil_scoped_release release;
              value = n.value_and_gradient(t, x, g, grad);
            }
            return py::make_tuple(value, py::array_t<double>(grad.size(), grad.data()));
          },
          "(sum(G * f(theta, X)), its gradient in theta)")
      .def(
          "hessian_vector_product",
          [vector_of](const Network& n, const CArray& theta, const CArray& v, const CArray& X, const CArray& G) {
            const Vec t = vector_of(theta, "theta"), direction = vector_of(v, "v");
            const Mat x = columns_of(X, "X"), g = columns_of(G, "G");
            Vec hv;
            {
              py::gil_scoped_release release;
              hv = n.hessian_vector_product(t, direction, x, g);
            }
            return py::array_t<double>(hv.size(), hv.data());
          },
          "H v of sum(G * f) + 0.5 sum(f * f) in theta");

  py::class_<FitProblem>(m, "FitProblem")
      .def(py::init([](const py::dict& options, const CArray& X, const CArray& y, std::vector<std::string> input_names,
                       std::vector<std::string> target_names) {
        FitRequest request;
        request.given = given_options(options);
        FitConfig cfg = make_fit_config(request);
        Dataset data;
        data.inputs = columns_of(X, "X");
        data.targets = columns_of(y, "y");
        data.input_names = std::move(input_names);
        data.target_names = std::move(target_names);
        data.source = "Python arrays";
        cfg.data.dataset = std::move(data);
        return make_fit_problem(cfg);
      }))
      .def_property_readonly("dim", [](const FitProblem& p) { return p.posterior->dim(); })
      .def_property_readonly("num_network_params", [](const FitProblem& p) { return p.posterior->model().num_params(); })
      .def_property_readonly("param_names", [](const FitProblem& p) { return p.posterior->layout().names(); })
      .def("logp_and_grad",
           [](const FitProblem& p, const CArray& theta) {
             if (theta.ndim() != 1 || theta.shape(0) != p.posterior->dim())
               throw InputError("theta must be a vector of " + std::to_string(p.posterior->dim()) + " parameters");
             Vec grad(p.posterior->dim());
             const double lp = p.posterior->log_density_and_grad(Eigen::Map<const Vec>(theta.data(), theta.shape(0)), grad);
             py::array_t<double> g(grad.size());
             std::copy(grad.data(), grad.data() + grad.size(), g.mutable_data());
             return py::make_tuple(lp, g);
           })
      .def("initial_point", [](const FitProblem& p, std::uint64_t seed) {
        Rng rng(seed, 0);
        const Vec x = p.posterior->initial_point(rng);
        py::array_t<double> out(x.size());
        std::copy(x.data(), x.data() + x.size(), out.mutable_data());
        return out;
      });

  py::class_<FittedModel>(m, "FittedModel")
      .def_static("load", &FittedModel::load)
      .def_property_readonly("method", &FittedModel::method)
      .def_property_readonly("input_names", &FittedModel::input_names)
      .def_property_readonly("target_names", &FittedModel::target_names)
      .def_property_readonly("param_names", [](const FittedModel& f) { return f.layout().names(); })
      .def_property_readonly("num_network_params", [](const FittedModel& f) { return f.model().num_params(); })
      .def_property_readonly("regression", &FittedModel::regression)
      .def_property_readonly("likelihood", [](const FittedModel& f) { return f.likelihood().kind(); })
      .def_property_readonly("draws", [](const FittedModel& f) { return draws_array(f.draws()); })
      // The network's own weights w per draw: theta's head, or w(u) under a shrinkage prior's
      // non-centred parameters (nn/non_centred_model.hpp).
      .def_property_readonly("network_weights",
                             [](const FittedModel& f) {
                               const auto* non_centred = dynamic_cast<const NonCentredModel*>(&f.model());
                               return draws_array(f.draws(), [&](const Vec& theta) -> Vec {
                                 const Vec u = theta.head(f.model().num_params());
                                 return non_centred ? non_centred->network_params(u) : u;
                               });
                             })
      .def_property_readonly("num_draws", [](const FittedModel& f) { return f.draws().size(); })
      // posterior.nc's chains (io/netcdf_inference_data.hpp): draws (S, K) reshape to (C, S / C, K).
      .def_property_readonly("posterior_chains", [](const FittedModel& f) { return posterior_chains(f.draws()); })
      // Active learning's scores per row of X (predictive/acquisition.hpp): "bald" (nats) or
      // "max-variance" (the epistemic variance, in the target's units squared).
      .def("acquisition",
           [](const FittedModel& f, const CArray& X, const std::string& strategy) {
             const Mat x = columns_of(X, "X");
             Vec score;
             {
               py::gil_scoped_release release;
               score = acquisition_scores(f, x, strategy);
             }
             py::array_t<double> out(score.size());
             std::copy(score.data(), score.data() + score.size(), out.mutable_data());
             return out;
           })
      .def_property_readonly("model_json", [](const FittedModel& f) { return to_python(f.model_json()); })
      .def("predict",
           [](const FittedModel& f, const CArray& X, std::vector<double> levels, std::uint64_t seed) {
             const Mat x = columns_of(X, "X");
             Rng rng(seed, 0x9ed);
             PredictiveSummary s;
             {
               py::gil_scoped_release release;
               s = f.predict(x, levels, rng);
             }
             py::dict intervals;
             for (const auto& [level, bounds] : s.intervals) intervals[py::float_(level)] = py::make_tuple(rows_of(bounds.first), rows_of(bounds.second));
             return py::dict(py::arg("mean") = rows_of(s.mean), py::arg("sd") = rows_of(s.sd),
                             py::arg("epistemic_sd") = rows_of(s.epistemic_sd), py::arg("intervals") = intervals);
           })
      // The conformal intervals (regression), sets or temperature-scaled probabilities of a fit
      // calibrated with conformal=... (services/conformal.hpp); None for a fit that was not.
      .def("conformal",
           [](const FittedModel& f, const CArray& X, std::uint64_t seed) -> py::object {
             const Mat x = columns_of(X, "X");
             Rng rng(seed, 0x9ed);
             std::optional<std::pair<ConformalCalibration, ConformalPrediction>> c;
             {
               py::gil_scoped_release release;
               c = conformal_predict(f, x, rng);
             }
             if (!c) return py::none();
             py::dict out(py::arg("method") = c->first.method, py::arg("confidence_level") = c->first.confidence_level,
                          py::arg("calibration") = to_python(c->first.to_json()));
             const ConformalPrediction& p = c->second;
             if (p.lower.size()) {
               out["lower"] = rows_of(p.lower);
               out["upper"] = rows_of(p.upper);
             }
             if (p.probabilities.size()) out["probabilities"] = rows_of(p.probabilities);
             if (p.in_set.size()) out["sets"] = rows_of(p.in_set);
             return std::move(out);
           })
      .def("ood_metrics",
           // metrics.json's "ood" section (services/ood_metrics.hpp): X's rows against ood_X's.
           [](const FittedModel& f, const CArray& X, const CArray& ood_X) {
             const Mat x = columns_of(X, "X"), ood = columns_of(ood_X, "ood_X");
             nlohmann::json j;
             {
               py::gil_scoped_release release;
               j = ood_metrics(f.model(), f.likelihood(), f.draws(), f.standardizer().transform_inputs(x),
                               f.standardizer().transform_inputs(ood), "X");
             }
             return to_python(j);
           })
      .def("pointwise_log_likelihood",
           [](const FittedModel& f, const CArray& X, const CArray& y) {
             Mat ll;
             const Mat x = columns_of(X, "X"), t = columns_of(y, "y");
             {
               py::gil_scoped_release release;
               ll = f.pointwise_log_likelihood(x, t);
             }
             py::array_t<double> out({ll.rows(), ll.cols()});
             Eigen::Map<RowMajor>(out.mutable_data(), ll.rows(), ll.cols()) = ll;
             return out;
           })
      .def("sample_predictive", [](const FittedModel& f, const CArray& X, const std::vector<Index>& draw_index, std::uint64_t seed) {
        const Mat x = columns_of(X, "X");
        Rng rng(seed, 0x5a3);
        std::vector<Mat> samples;
        {
          py::gil_scoped_release release;
          samples = f.sample_predictive(x, draw_index, rng);
        }
        // (samples, n, t)
        const Index S = static_cast<Index>(samples.size()), n = x.cols(), t = samples.empty() ? 0 : samples.front().rows();
        py::array_t<double> out({S, n, t});
        auto o = out.mutable_unchecked<3>();
        for (Index s = 0; s < S; ++s)
          for (Index i = 0; i < n; ++i)
            for (Index k = 0; k < t; ++k) o(s, i, k) = samples[static_cast<std::size_t>(s)](k, i);
        return out;
      });
}
