/*
 * rehome.h - the directory entries a ring change moves (docs/design.md
 * section 12): an entry this switch owns whose home moves in a step is
 * removed before the step is published and installed again, at the home
 * the ring then gives, after it.
 *
 * ring_change.c calls it around each step; it installs and removes through
 * reconcile.h. Control thread only.
 */
#ifndef SKL_SW_REHOME_H
#define SKL_SW_REHOME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw;

int rehome_init(struct sw *sw, char *err, size_t errlen);
void rehome_fini(struct sw *sw);

/*
 * Remove every entry this switch owns whose home moves (moves(arg, keyhash)
 * true), UNREPLICATE its copies, and remember it; rehome_install() installs
 * the remembered keys again at the home the ring now gives, set {home},
 * completed 0. Returns the entries removed. In between, no key for which
 * moves() holds is installed (its home in the workers' ring is about to be
 * wrong): arg must live until rehome_install().
 */
uint32_t rehome_remove(struct sw *sw, bool (*moves)(void *arg, uint64_t keyhash), void *arg);
uint32_t rehome_install(struct sw *sw);

#endif
