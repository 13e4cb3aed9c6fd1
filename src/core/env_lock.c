#include "env_lock.h"

#include <pthread.h>

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;

void lbk_env_lock_acquire(void) { pthread_mutex_lock(&env_lock); }

void lbk_env_lock_release(void) { pthread_mutex_unlock(&env_lock); }
