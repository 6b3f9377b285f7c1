#pragma once
// How ggml's CPU worker threads wait: libgomp's OMP_WAIT_POLICY, chosen before libgomp starts.

namespace clef::cli {

/// ggml's CPU workers are OpenMP threads (GGML_OPENMP), and libgomp's default is to spin at every
/// barrier for a while before sleeping. On a shared machine that costs more than the CPU another
/// process takes: a decision beside one busy process on 2 cores took 2.29x its idle time with the
/// default and 1.68x with OMP_WAIT_POLICY=passive, idle times within 3% (docs/performance.md,
/// issue 19). libgomp reads the variable once, when it is loaded, so when it is unset this sets it
/// to "passive" and executes the same program again (/proc/self/exe, same arguments and pid).
/// A value the user set, any but empty, is kept. Not under valgrind (its preload library in
/// LD_PRELOAD), where /proc/self/exe is valgrind's tool. Returns when nothing was executed (then
/// the process goes on with the policy libgomp read).
void use_passive_openmp_wait(char** argv);

}  // namespace clef::cli
