/* plat_int.h — internals shared by the platform sources. */
#ifndef PLAT_INT_H
#define PLAT_INT_H

#include "platform.h"

#ifdef __cplusplus
extern "C" {
#endif

void plat_device_h100_sxm(plat_device *d);

#ifdef __cplusplus
}
#endif
#endif
