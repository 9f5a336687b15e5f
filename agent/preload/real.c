/* real: see real.h. */
#include "preload.h"

#include <dlfcn.h>

struct real_functions real;

int real_resolve(void)
{
    int missing = 0;
#define REAL_LOOKUP(ret, name, params)                                         \
    real.name = (ret (*) params)dlsym(RTLD_NEXT, #name);                       \
    if (!real.name) {                                                          \
        pl_log("the C library has no '%s' (%s); calls to it will fail",        \
               #name, dlerror());                                              \
        missing++;                                                             \
    }
    REAL_FUNCTIONS(REAL_LOOKUP)
#undef REAL_LOOKUP
    return missing ? -1 : 0;
}
