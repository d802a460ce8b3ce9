#pragma once
/// @file Stopping a run cleanly on SIGINT, SIGTERM or SIGHUP.
///
/// Why: a user presses Ctrl-C, a batch scheduler sends SIGTERM before it kills a job, a closed
/// terminal sends SIGHUP. Each should end the run at its next iteration (chains) or epoch (training),
/// keep what was drawn or trained, write it, and exit with 128 + the signal, never lose everything.
/// A StopSignalScope installs handlers that only set a flag; the chains (InterruptObserver), the
/// training loops and the ensemble members poll stop_requested(). A second signal while stopping
/// gets the default action: the process ends.
namespace uqnn {

/// Installs the handlers for its lifetime; scopes nest (a fit holds one, and its chains' driver
/// another). The outermost scope clears the flag when it begins and restores the previous handlers
/// when it ends; the signal stays readable afterwards (stop_signal), the flag only inside a scope.
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};

/// Whether a stop signal arrived (or request_stop was called) since the outermost scope began;
/// always false outside every scope, so a stopped run's flag does not stop the runs after it.
bool stop_requested();
/// The signal that asked the run to stop (SIGINT, SIGTERM, SIGHUP), 0 when none did.
int stop_signal();
/// Sets the flag as the handler does, without a signal (tests, the Python module's Ctrl-C).
void request_stop();

}  // namespace uqnn
