/* tsan_options: ThreadSanitizer's defaults for adafsd (built only with
 * --enable-sanitizers=thread).
 *
 * A CREATE_BATCH takes the record lock of every stripe its paths fall in,
 * in stripe order (deadlock-free by that order), so one thread may hold up
 * to SERVER_STRIPES (256) mutexes. TSan's deadlock detector tracks at most
 * 64 per thread and aborts the process beyond ("CHECK failed:
 * sanitizer_deadlock_detector.h:67"); race detection is unaffected. Options
 * in TSAN_OPTIONS still win. */
__attribute__((visibility("default"))) const char *__tsan_default_options(void);

const char *__tsan_default_options(void)
{
    return "detect_deadlocks=0";
}
