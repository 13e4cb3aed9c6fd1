/* The process's one lock around its environment. setenv may move
 * `environ` while another thread's getenv walks it, and PoCL reads its
 * POCL_* variables while it starts its devices: every read or write of the
 * environment on the library's paths (the CPU share, the device listing,
 * the cache directories) holds this lock, so that two contexts created in
 * two threads at once cannot meet there. Never held while logging: a
 * message may reach a library caller's callback. */
#ifndef LBK_ENV_LOCK_H
#define LBK_ENV_LOCK_H

void lbk_env_lock_acquire(void);
void lbk_env_lock_release(void);

#endif
