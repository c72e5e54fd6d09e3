/* spec_defaults.c — hot_layer_spec_defaults: the public face of the planner's defaults
 * (plan_spec_defaults in gen/plan.c stays internal), so that an application describing a layer
 * in C needs nothing beyond hot.h. */
#include "hot.h"
#include "plan.h"

hot_status hot_layer_spec_defaults(hot_layer_spec *spec, hot_recipe recipe) {
  if (!spec || (int)recipe < (int)HOT_RECIPE_HOT || (int)recipe > (int)HOT_RECIPE_NVFP4)
    return HOT_ERR_INVALID;
  plan_spec_defaults(spec, recipe);
  return HOT_OK;
}
