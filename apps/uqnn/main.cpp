#include <CLI/CLI.hpp>
int main(int argc, char** argv) {
  CLI::App app{"uqnn: uncertainty quantification for neural networks"};
  CLI11_PARSE(app, argc, argv);
  return 0;
}
