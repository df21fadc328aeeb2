// tensor/sanitizer_options.cpp: the runtime options of the sanitize and tsan builds' executables.
//
// Compiled into every executable of the `sanitize` and `tsan` presets
// (CMakeLists.txt adds it only there). The sanitizer runtimes call these
// functions before main(); ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS and
// TSAN_OPTIONS in the environment still override any option set here.
//
// ASan: stop at the first report (halt_on_error) with exit status 86, told apart
//   from a program's own exit 1; catch use-after-return and initialization-order
//   bugs; let a huge allocation fail as malloc does (a ts::Error), not as an ASan
//   abort (allocator_may_return_null); leave the shadow gap unprotected, where
//   the CUDA driver maps device memory (protect_shadow_gap=0).
// UBSan: the code is built with -fno-sanitize-recover, so the first report
//   ends the process (exit status 86); print its stack.
// LSan: a leak at exit is a report too (exit status 86).
// TSan: the first data race, lock-order inversion or misuse of a mutex ends the
//   process (exit status 86), with the stacks of both accesses.

#define TS_SANITIZER_OPTIONS_EXPORT extern "C" __attribute__((visibility("default"), used))

TS_SANITIZER_OPTIONS_EXPORT const char* __asan_default_options() {
  return "halt_on_error=1:exitcode=86:detect_leaks=1:detect_stack_use_after_return=1:"
         "check_initialization_order=1:strict_init_order=1:allocator_may_return_null=1:protect_shadow_gap=0";
}

TS_SANITIZER_OPTIONS_EXPORT const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1:exitcode=86";
}

TS_SANITIZER_OPTIONS_EXPORT const char* __lsan_default_options() { return "exitcode=86"; }

TS_SANITIZER_OPTIONS_EXPORT const char* __tsan_default_options() {
  return "halt_on_error=1:exitcode=86:second_deadlock_stack=1";
}
