/* Preloaded (LD_PRELOAD) into a server the work lens counts whose interpreter takes its
 * hash seed from getrandom() whatever the environment says: NGINX Unit's Python starts
 * with an isolated configuration (PyConfig_InitIsolatedConfig), which ignores
 * PYTHONHASHSEED, so every life hashed its dicts' keys differently and the application's
 * instructions per request moved 3.7% from life to life (0.4% with this library).
 * getrandom() returns the same bytes on every call, in every process. Built by
 * scripts/install into /opt/serverbench/lib (work_lens.fixed_random); never in a cell
 * that is timed. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/types.h>

ssize_t getrandom(void *buffer, size_t length, unsigned int flags)
{
    (void)flags;
    memset(buffer, 0x5a, length);
    return (ssize_t)length;
}
