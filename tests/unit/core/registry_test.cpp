#include <gtest/gtest.h>

#include "uqnn/core/registry.hpp"
#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/optim/optimizer.hpp"
#include "uqnn/predictive/thompson_sampling.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/vocabulary.hpp"

namespace uqnn {
namespace {

struct Colour {
  std::string name = {};
  int value = 0;
  std::string summary = {};
  std::vector<std::string> aliases = {};
};

TEST(Registry, FindsNamesAndAliasesAndNamesTheValidOnesOtherwise) {
  const Registry<Colour> colours("--colour", {{.name = "red", .value = 1, .summary = "warm"},
                                              {.name = "grey", .value = 2, .summary = "neutral", .aliases = {"gray"}}});
  EXPECT_EQ(colours.find("red").value, 1);
  EXPECT_EQ(colours.find("gray").value, 2);
  EXPECT_EQ(colours.names(), (std::vector<std::string>{"red", "grey"}));  // aliases are not listed
  EXPECT_FALSE(colours.contains("blue"));
  try {
    colours.find("blue");
    FAIL() << "an unknown name must be an input error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--colour 'blue' is not known: valid are red, grey");
  }
}

TEST(Registry, RefusesANameDeclaredTwiceEvenAsAnAlias) {
  EXPECT_THROW(Registry<Colour>("--colour", {{.name = "red"}, {.name = "red"}}), std::logic_error);
  EXPECT_THROW(Registry<Colour>("--colour", {{.name = "grey", .aliases = {"gray"}}, {.name = "gray"}}), std::logic_error);
}

// The closed sets parse through their registries, and each name round-trips.
TEST(Registry, EveryClosedSetRoundTripsItsNames) {
  for (const ActivationKind& a : activation_kinds()) EXPECT_EQ(to_string(parse_activation(a.name)), a.name);
  for (const InitSchemeKind& i : init_scheme_kinds()) EXPECT_EQ(to_string(parse_init_scheme(i.name)), i.name);
  EXPECT_EQ(parse_activation("swish"), Activation::Silu);
  EXPECT_THROW(parse_activation("gelu"), InputError);
  EXPECT_TRUE(is_classification("categorical"));
  EXPECT_FALSE(is_classification("heteroscedastic"));
  for (const PriorKind& p : prior_kinds()) EXPECT_NE(static_cast<bool>(p.build), p.shrinkage) << p.name;
  for (const LikelihoodKind& l : likelihood_kinds()) EXPECT_TRUE(static_cast<bool>(l.build)) << l.name;
  for (const ModelKind& m : model_kinds()) EXPECT_TRUE(static_cast<bool>(m.build)) << m.name;
  for (const BanditAgentKind& b : bandit_agent_kinds()) EXPECT_TRUE(static_cast<bool>(b.make)) << b.name;
  // First-order optimisers make an Optimizer; lbfgs and auto are resolved by train().
  for (const OptimizerKind& o : optimizer_kinds())
    EXPECT_EQ(static_cast<bool>(o.make), o.name != "lbfgs" && o.name != "auto") << o.name;
}

// What Python builds its docstrings and checks from lists every registry, in declaration order.
TEST(Registry, TheVocabularyListsEveryRegistry) {
  const nlohmann::json v = vocabulary();
  const auto names = [&](const char* kind) {
    std::vector<std::string> out;
    for (const auto& e : v.at(kind)) out.push_back(e.at("name"));
    return out;
  };
  EXPECT_EQ(names("activation"), activation_kinds().names());
  EXPECT_EQ(names("prior"), prior_kinds().names());
  EXPECT_EQ(names("likelihood"), likelihood_kinds().names());
  EXPECT_EQ(names("model"), model_kinds().names());
  EXPECT_EQ(names("optimizer"), optimizer_kinds().names());
  EXPECT_EQ(names("lr_schedule"), schedule_kinds().names());
  EXPECT_EQ(names("bandit_agent"), bandit_agent_kinds().names());
  EXPECT_EQ(names("method"), method_names());
  for (const auto& m : v.at("method")) EXPECT_FALSE(m.at("family").get<std::string>().empty());
}

}  // namespace
}  // namespace uqnn
