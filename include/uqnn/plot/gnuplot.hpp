#pragma once
/// @file Running gnuplot as a child process.
#include <chrono>
#include <string>

namespace uqnn::plot {

/// The gnuplot executable: $UQNN_GNUPLOT when set, otherwise "gnuplot" looked up on PATH.
std::string gnuplot_executable();

/// Runs `script` with gnuplot and waits for it to exit. The script is written to a file in a
/// fresh temporary directory (removed afterwards); gnuplot's stdin is /dev/null and its stderr is
/// captured, so the call cannot block on a pipe or an interactive prompt. After `timeout` the
/// child is killed.
/// Throws std::runtime_error, quoting gnuplot's stderr, when gnuplot cannot be started, exits
/// with a non-zero status, is killed by a signal or times out.
void run_gnuplot(const std::string& script, std::chrono::seconds timeout = std::chrono::seconds(120));

/// `text` as a gnuplot double-quoted string literal (backslash, quote and backquote escaped, newlines turned
/// to spaces), so any text is shown literally and never runs as a command.
std::string gnuplot_quote(const std::string& text);

}  // namespace uqnn::plot
