#include "uqnn/nn/cnn_layer_list.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <numeric>

#include "uqnn/core/error.hpp"
#include "uqnn/nn/cnn.hpp"

namespace uqnn {

namespace {

constexpr const char* kCnnValidTokens =
    "conv<out>k<k>[s<stride>][p<pad>][g<groups>][nb], pool<k>[s<stride>][p<pad>] (max; also maxpool<k>), "
    "avgpool<k>[s<stride>][p<pad>], gap, flatten, fc<n>, gn<groups>, frn, bn, res<out>[s<stride>][gn<groups>|frn|bn|nn], "
    "resnet<depth>[w<width>][gn<groups>|frn|bn|nn] (docs/networks.md)";

/// One token split as head, number and options: "conv16k3s2" -> conv, 16, {k: 3, s: 2}.
struct CnnToken {
  std::string text, head;
  long long number = -1;                       ///< -1: none
  std::vector<std::pair<std::string, long long>> options;  ///< in order; -1: no number
};

/// A letters-then-digits run starting at `at`; returns false when there is none.
bool read_cnn_token_run(const std::string& s, std::size_t& at, std::string& letters, long long& number) {
  letters.clear();
  number = -1;
  while (at < s.size() && std::isalpha(static_cast<unsigned char>(s[at]))) letters += s[at++];
  std::string digits;
  while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) digits += s[at++];
  if (!digits.empty()) number = digits.size() > 9 ? 1'000'000'000LL : std::stoll(digits);
  return !letters.empty() || !digits.empty();
}

class CnnLayerParser {
 public:
  CnnLayerParser(std::string text, ImageShape input, Activation activation, std::string what)
      : text_(std::move(text)), input_(input), shape_(input), activation_(activation), what_(std::move(what)) {}

  std::vector<CnnLayer> parse(Index output_dim) {
    std::vector<std::string> pieces;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text_.find(',', start);
      pieces.push_back(text_.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (pieces.size() == 1 && trim(pieces[0]).empty())
      throw InputError(fmt::format("{} is empty: give a layer list such as conv16k3,pool2,conv32k3,pool2,fc128, or a "
                                   "preset such as resnet8; valid tokens are {}",
                                   what_, kCnnValidTokens));
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      position_ = i + 1;
      token_ = tokenize(trim(pieces[i]));
      add_token();
      check_shapes();
    }
    flush_activation();
    CnnLayer fc;
    fc.type = CnnLayerType::Linear;
    fc.name = next_name("fc");
    fc.out = output_dim;
    layers_.push_back(fc);
    token_.text = "(the output layer)";
    check_shapes();
    return layers_;
  }

 private:
  static std::string trim(const std::string& s) {
    const auto first = s.find_first_not_of(" \t"), last = s.find_last_not_of(" \t");
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(fmt::format("{} '{}': token {} '{}' {}; valid tokens are {}", what_, text_, position_, token_.text, problem,
                                 kCnnValidTokens));
  }

  CnnToken tokenize(const std::string& text) {
    token_ = CnnToken{text, "", -1, {}};
    if (text.empty()) fail("is empty (two commas in a row, or one at an end?)");
    std::size_t at = 0;
    std::string letters;
    long long number = -1;
    read_cnn_token_run(text, at, letters, number);
    if (letters.empty()) fail("does not start with a layer name");
    CnnToken t{text, letters, number, {}};
    while (at < text.size()) {
      if (!read_cnn_token_run(text, at, letters, number)) fail(fmt::format("has an unexpected character '{}'", text[at]));
      if (letters.empty()) fail("has a number without an option letter before it");
      t.options.emplace_back(letters, number);
    }
    return t;
  }

  /// The token's number: required (>= 1) or absent per `needed`.
  Index number(bool needed) const {
    if (needed && token_.number < 1) fail("needs a number >= 1 after '" + token_.head + "'");
    if (!needed && token_.number >= 0) fail("takes no number after '" + token_.head + "'");
    return static_cast<Index>(token_.number);
  }

  /// Options of the token among `allowed` ("name": needs a number >= 0 (or >= 1 for k, s, g, w), "name!": no number).
  std::map<std::string, long long> options(const std::map<std::string, bool>& allowed) const {
    std::map<std::string, long long> out;
    std::string listed;
    for (const auto& [name, numbered] : allowed) listed += (listed.empty() ? "" : ", ") + name + (numbered ? "<n>" : "");
    for (const auto& [name, value] : token_.options) {
      const auto it = allowed.find(name);
      if (it == allowed.end())
        fail(fmt::format("has an unknown option '{}' for {} (options: {})", name, token_.head, listed.empty() ? "none" : listed));
      if (it->second && value < 0) fail(fmt::format("needs a number after option '{}'", name));
      if (!it->second && value >= 0) fail(fmt::format("takes no number after option '{}'", name));
      if (it->second && value < 1 && name != "p") fail(fmt::format("option '{}' must be >= 1", name));
      if (!out.emplace(name, value).second) fail(fmt::format("gives option '{}' twice", name));
    }
    return out;
  }

  std::string next_name(const std::string& kind) { return fmt::format("{}{}", kind, ++counters_[kind]); }

  void flush_activation() {
    if (pending_activation_ && activation_ != Activation::Identity) {
      CnnLayer a;
      a.type = CnnLayerType::Activation;
      a.activation = activation_;
      layers_.push_back(a);
    }
    pending_activation_ = false;
  }

  CnnLayer activation_layer() const {
    CnnLayer a;
    a.type = CnnLayerType::Activation;
    a.activation = activation_;
    return a;
  }

  /// The channel count the next layer sees (the shape is checked after every token).
  Index channels() const { return shape_.channels; }

  static CnnLayer conv(std::string name, Index out, Index kernel, Index stride, Index pad, bool bias) {
    CnnLayer c;
    c.type = CnnLayerType::Conv;
    c.name = std::move(name);
    c.out = out;
    c.kernel_h = c.kernel_w = kernel;
    c.stride_h = c.stride_w = stride;
    c.pad_h = c.pad_w = pad;
    c.bias = bias;
    return c;
  }

  /// A normalisation kind chosen by a token's options ("gn", "frn", "bn", "nn"), GroupNorm with
  /// gcd(channels, 8) groups when none is given.
  struct Norm {
    CnnLayerType type = CnnLayerType::GroupNorm;
    Index groups = 0;  ///< 0: gcd(channels, 8)
    bool none = false;
  };
  Norm norm_of(const std::map<std::string, long long>& o) const {
    Norm n;
    int given = 0;
    if (o.count("gn")) n = {CnnLayerType::GroupNorm, static_cast<Index>(o.at("gn")), false}, ++given;
    if (o.count("frn")) n = {CnnLayerType::FilterResponseNorm, 0, false}, ++given;
    if (o.count("bn")) n = {CnnLayerType::BatchNorm, 0, false}, ++given;
    if (o.count("nn")) n = {CnnLayerType::GroupNorm, 0, true}, ++given;
    if (given > 1) fail("gives more than one normalisation (one of gn<groups>, frn, bn, nn)");
    return n;
  }
  static CnnLayer norm_layer(const Norm& n, std::string name, Index channels) {
    CnnLayer l;
    l.type = n.type;
    l.name = std::move(name);
    if (n.type == CnnLayerType::GroupNorm) l.groups = n.groups > 0 ? n.groups : std::gcd(channels, Index{8});
    if (n.type == CnnLayerType::FilterResponseNorm) l.eps = 1e-6;
    return l;
  }

  /// A BasicBlock of `out` channels and `stride` on `in` channels.
  CnnLayer basic_block(Index in, Index out, Index stride, const Norm& norm) {
    const std::string name = next_name("res");
    const bool bias = norm.none;  // a conv followed by a normalisation has no bias (torchvision's BasicBlock)
    CnnLayer block;
    block.type = CnnLayerType::Residual;
    block.activation = activation_;
    block.body.push_back(conv(name + ".conv1", out, 3, stride, 1, bias));
    if (!norm.none) block.body.push_back(norm_layer(norm, name + ".norm1", out));
    if (activation_ != Activation::Identity) block.body.push_back(activation_layer());
    block.body.push_back(conv(name + ".conv2", out, 3, 1, 1, bias));
    if (!norm.none) block.body.push_back(norm_layer(norm, name + ".norm2", out));
    if (stride != 1 || in != out) {
      block.shortcut.push_back(conv(name + ".shortcut.0", out, 1, stride, 0, bias));
      if (!norm.none) block.shortcut.push_back(norm_layer(norm, name + ".shortcut.1", out));
    }
    return block;
  }

  void add_token() {
    const std::string& h = token_.head;
    const bool is_norm = h == "gn" || h == "frn" || h == "bn";
    if (!is_norm) flush_activation();
    if (h == "conv") {
      const Index out = number(true);
      const auto o = options({{"k", true}, {"s", true}, {"p", true}, {"g", true}, {"nb", false}});
      if (!o.count("k")) fail("needs its kernel size: conv<out>k<k>, e.g. conv16k3");
      CnnLayer c = conv(next_name("conv"), out, static_cast<Index>(o.at("k")), o.count("s") ? static_cast<Index>(o.at("s")) : 1,
                        o.count("p") ? static_cast<Index>(o.at("p")) : 0, !o.count("nb"));
      c.groups = o.count("g") ? static_cast<Index>(o.at("g")) : 1;
      layers_.push_back(c);
      pending_activation_ = true;
    } else if (h == "pool" || h == "maxpool" || h == "avgpool") {
      CnnLayer p;
      p.type = h == "avgpool" ? CnnLayerType::AvgPool : CnnLayerType::MaxPool;
      const Index k = number(true);
      const auto o = options({{"s", true}, {"p", true}});
      p.kernel_h = p.kernel_w = k;
      p.stride_h = p.stride_w = o.count("s") ? static_cast<Index>(o.at("s")) : k;
      p.pad_h = p.pad_w = o.count("p") ? static_cast<Index>(o.at("p")) : 0;
      layers_.push_back(p);
    } else if (h == "gap" || h == "flatten") {
      number(false);
      options({});
      CnnLayer g;
      g.type = h == "gap" ? CnnLayerType::GlobalAvgPool : CnnLayerType::Flatten;
      layers_.push_back(g);
    } else if (h == "fc") {
      CnnLayer fc;
      fc.type = CnnLayerType::Linear;
      fc.out = number(true);
      options({});
      fc.name = next_name("fc");
      layers_.push_back(fc);
      pending_activation_ = true;
    } else if (is_norm) {
      const Index groups = h == "gn" ? number(true) : (number(false), 0);
      options({});
      Norm n{h == "gn" ? CnnLayerType::GroupNorm : h == "frn" ? CnnLayerType::FilterResponseNorm : CnnLayerType::BatchNorm, groups, false};
      layers_.push_back(norm_layer(n, next_name(h), channels()));
      flush_activation();  // conv -> norm -> activation
    } else if (h == "res") {
      const Index out = number(true);
      const auto o = options({{"s", true}, {"gn", true}, {"frn", false}, {"bn", false}, {"nn", false}});
      layers_.push_back(basic_block(channels(), out, o.count("s") ? static_cast<Index>(o.at("s")) : 1, norm_of(o)));
    } else if (h == "resnet") {
      const Index depth = number(true);
      const auto o = options({{"w", true}, {"gn", true}, {"frn", false}, {"bn", false}, {"nn", false}});
      if (depth < 8 || (depth - 2) % 6 != 0) fail("has depth " + std::to_string(depth) + ": it must be 6 m + 2 (8, 14, 20, 32, 44, 56, ...)");
      const Index width = o.count("w") ? static_cast<Index>(o.at("w")) : 16, blocks = (depth - 2) / 6;
      const Norm norm = norm_of(o);
      layers_.push_back(conv(next_name("conv"), width, 3, 1, 1, norm.none));
      if (!norm.none) layers_.push_back(norm_layer(norm, next_name("norm"), width));
      if (activation_ != Activation::Identity) layers_.push_back(activation_layer());
      Index in = width;
      for (Index stage = 0; stage < 3; ++stage)
        for (Index b = 0; b < blocks; ++b) {
          const Index out = width << stage;
          layers_.push_back(basic_block(in, out, stage > 0 && b == 0 ? 2 : 1, norm));
          in = out;
        }
      CnnLayer gap;
      gap.type = CnnLayerType::GlobalAvgPool;
      layers_.push_back(gap);
    } else {
      fail("is not a layer");
    }
  }

  /// Compiles the layers so far: a shape that does not fit is an error at this token.
  void check_shapes() {
    try {
      const Cnn net(input_, layers_);
      shape_ = net.layers().back().out_shape;
    } catch (const InputError& e) {
      std::string message = e.what();
      const std::string prefix = "cnn model: ";
      if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
      throw InputError(fmt::format("{} '{}': token {} '{}' does not fit its input {}: {}", what_, text_, position_, token_.text,
                                   shape_.to_string(), message));
    }
  }

  std::string text_;
  ImageShape input_, shape_;
  Activation activation_;
  std::string what_;
  std::vector<CnnLayer> layers_;
  std::map<std::string, int> counters_;
  bool pending_activation_ = false;
  std::size_t position_ = 0;
  CnnToken token_;
};

}  // namespace

std::vector<CnnLayer> parse_cnn_layers(const std::string& text, const ImageShape& input, Index output_dim, Activation activation,
                                       const std::string& what) {
  if (output_dim < 1) throw InputError(fmt::format("{}: the network needs at least one output, not {}", what, output_dim));
  CnnLayerParser parser(text, input, activation, what);
  return parser.parse(output_dim);
}

ImageShape parse_image_shape(const std::vector<Index>& dims, Index input_dim, const std::string& what) {
  if (dims.size() != 2 && dims.size() != 3)
    throw InputError(fmt::format("{} has {} sizes: give C,H,W (e.g. 1,28,28) or H,W for one channel", what, dims.size()));
  for (Index d : dims)
    if (d < 1) throw InputError(fmt::format("{}: every size must be >= 1, not {}", what, d));
  const ImageShape shape = dims.size() == 3 ? ImageShape{dims[0], dims[1], dims[2]} : ImageShape{1, dims[0], dims[1]};
  if (input_dim > 0 && shape.size() != input_dim)
    throw InputError(fmt::format("{} {} is {} values per example, but the data have {} input columns", what, shape.to_string(),
                                 shape.size(), input_dim));
  return shape;
}

}  // namespace uqnn
