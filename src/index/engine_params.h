/* The engine's parameters from the index's: the one place where the
 * options' knn, device and tree keys meet the engine interface (engine.h). */
#ifndef LBK_ENGINE_PARAMS_H
#define LBK_ENGINE_PARAMS_H

#include "engine.h"
#include "index.h"

/* `tuning`: kept by pointer (NULL = derived from the device). */
void lbk_engine_params_from_index(const lbk_index_params *index, const lbk_tuning *tuning,
                                  lbk_engine_params *params);

#endif
