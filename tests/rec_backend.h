/* rec_backend.h - a test backend that checks lib/backend.h's replay rule:
 * a wrapper around another backend that forwards every call and records
 * each one made between begin_step and end_step with its arguments
 * (buffers by storage, offset, type and shape; parameter structs field by
 * field; host pointers of transfers), and compares every step with the
 * first one recorded. A step whose calls differ is what a captured GPU
 * step (a CUDA graph, a Vulkan command buffer) would replay wrongly: the
 * wrapper's next sync() then fails, naming the step, the call and the op.
 *
 * Buffers are the inner backend's (buf_alloc and buf_weight forward), so
 * that the inner backend's own checks still see its buffers. */
#ifndef TERN_TESTS_REC_BACKEND_H
#define TERN_TESTS_REC_BACKEND_H

#include "lib/backend.h"

/* A recording wrapper around inner (borrowed: free the wrapper first). */
int rec_backend_new(struct tern_backend **out, struct tern_backend *inner, tern_err *err);

/* Steps compared with the first recorded one (since the last reset). */
int rec_backend_steps(const struct tern_backend *be);

/* Forget the recorded step: the next one is recorded anew (a caller that
 * changes what a step is, e.g. the number of sequences it decodes). */
void rec_backend_reset(struct tern_backend *be);

#endif
