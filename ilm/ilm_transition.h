/*
 * ilm_transition.h - the scanner's transitions (transition.c), private to
 * ilm/: which class a version should move to, and the paced move.
 */
#ifndef STRATA_ILM_TRANSITION_H
#define STRATA_ILM_TRANSITION_H

#include <stdatomic.h>

#include "strata/ilm.h"

/*
 * The class a version should be moved to now, or NULL: the due
 * Transition (current) or NoncurrentVersionTransition (noncurrent, since
 * since_ms, newer_nc newer noncurrent versions) whose class is served by a
 * configured tier, unless the version is there already.  Delete markers
 * never move.
 */
const char *strata_ilm__transition_target(const struct strata_ilm_opts *o,
                                          const struct strata_lc_config *cfg,
                                          const struct strata_lc_obj *obj,
                                          const struct strata_obj_info *in, bool current,
                                          int64_t since_ms, unsigned newer_nc, int64_t now_ms,
                                          int64_t day_ms);
/* Move one version (its copy charged to move, the engine's budget of
 * o->move_mbps; stopped by *stop); counts in st.  0, or the error
 * (STRATA_EBUSY / EPRECOND: retried later). */
struct strata_ilm_budget;
int strata_ilm__transition_run(const struct strata_ilm_opts *o, struct strata_ilm_budget *move,
                               atomic_bool *stop, const char *bucket, const char *key,
                               const char *vid, const char *cls, struct strata_ilm_stats *st);
/* At the start of a pass: finish transitions a crash interrupted. */
void strata_ilm__transition_pass_begin(const struct strata_ilm_opts *o,
                                       struct strata_ilm_stats *st);

#endif /* STRATA_ILM_TRANSITION_H */
