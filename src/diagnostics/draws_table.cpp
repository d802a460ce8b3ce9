#include "uqnn/diagnostics/draws_table.hpp"

namespace uqnn::diagnostics {

bool is_sampler_column(const std::string& name) {
  return name != "lp__" && name.size() > 2 && name.compare(name.size() - 2, 2, "__") == 0;
}

DrawsTable without_sampler_columns(const DrawsTable& table) {
  DrawsTable out;
  out.max_depth = table.max_depth;
  for (std::size_t q = 0; q < table.names.size(); ++q)
    if (!is_sampler_column(table.names[q])) {
      out.names.push_back(table.names[q]);
      out.draws.push_back(table.draws[q]);
    }
  return out;
}

}  // namespace uqnn::diagnostics
