/* Prints, as JSON, which instruction-set macros the compiler saw: proof that
   CC_OPT_FLAGS from configure reached the C++/C compile actions. */
#include <stdio.h>

int main(void) {
  printf("{\"optimized\": %s, \"sse4_2\": %s, \"avx\": %s, \"avx2\": %s, \"fma\": %s, \"avx512f\": %s}\n",
#ifdef __OPTIMIZE__
         "true",
#else
         "false",
#endif
#ifdef __SSE4_2__
         "true",
#else
         "false",
#endif
#ifdef __AVX__
         "true",
#else
         "false",
#endif
#ifdef __AVX2__
         "true",
#else
         "false",
#endif
#ifdef __FMA__
         "true",
#else
         "false",
#endif
#ifdef __AVX512F__
         "true"
#else
         "false"
#endif
  );
  return 0;
}
