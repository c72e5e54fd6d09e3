/* hadamard_quant_ref.c — CPU twin of templates/hadamard_quant.cu (placeholder, filled by the
 * reference implementation). */
#include "hot_math.cuh"
