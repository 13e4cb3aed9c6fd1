/* Private to outfile.c: the partial files a signal must remove, and the
 * signal handlers that remove them. Everything the handler touches is
 * prepared in advance; it only unlinks and re-raises (async-signal-safe). */
#ifndef LBK_CLEANUP_H
#define LBK_CLEANUP_H

/* A partial file this process created, removed on a fatal signal until
 * lbk_cleanup_forget. */
void lbk_cleanup_remember(const char *path);
void lbk_cleanup_forget(const char *path);

/* Around creating and renaming files: a fatal signal that arrives in
 * between waits until lbk_cleanup_release, so that no file is created
 * unremembered and no commit stops half way. */
void lbk_cleanup_hold(void);
void lbk_cleanup_release(void);

#endif
