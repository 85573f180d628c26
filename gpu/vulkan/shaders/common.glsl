/* common.glsl - what every shader of the Vulkan backend shares: the
 * workgroup size (specialization constant 0, set by the host), the status
 * word a shader flags a bad value in (binding 8: gpu/vulkan/vk_impl.h),
 * f16 / bf16 decoding, and workgroup reductions (subgroup arithmetic, or
 * shared memory alone when built with -DNO_SUBGROUP). */
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : enable
#ifndef NO_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint SPEC1 = 0;
layout(constant_id = 2) const uint SPEC2 = 0;
layout(constant_id = 3) const uint SPEC3 = 0;
layout(constant_id = 4) const uint SPEC4 = 0;

layout(binding = 8) buffer Status { uint status[4]; };

/* status[0] bits (vk_backend.c's sync names them) */
#define ST_ROW_ID 1u    /* get_rows: an id outside the rows */
#define ST_KV_STORE 2u  /* kv_store: a position outside the cache */
#define ST_EXPERT_ID 4u /* mat_mul_id: an expert outside the stack */
#define ST_ATTENTION 8u /* attention: a query position outside the cache */
#define ST_SEQUENCE 16u /* with ST_KV_STORE or ST_ATTENTION: the value is a sequence */

void flag_bad(uint what, int value)
{
	if (atomicOr(status[0], what) == 0u)
		status[1] = uint(value);
}

float f16_bits(uint h) { return unpackHalf2x16(h).x; }
float bf16_bits(uint h) { return uintBitsToFloat(h << 16); }

/* index of an element in a grid of (x, y) workgroups */
uint flat_id() { return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x; }

#ifndef NO_SUBGROUP
shared float red_sg[64];
float wg_sum(float x)
{
	x = subgroupAdd(x);
	if (gl_NumSubgroups == 1u)
		return x;
	if (subgroupElect())
		red_sg[gl_SubgroupID] = x;
	barrier();
	float t = 0.0;
	for (uint i = 0u; i < gl_NumSubgroups; i++)
		t += red_sg[i];
	barrier();
	return t;
}
float wg_max(float x)
{
	x = subgroupMax(x);
	if (gl_NumSubgroups == 1u)
		return x;
	if (subgroupElect())
		red_sg[gl_SubgroupID] = x;
	barrier();
	float t = red_sg[0];
	for (uint i = 1u; i < gl_NumSubgroups; i++)
		t = max(t, red_sg[i]);
	barrier();
	return t;
}
#else
shared float red_sh[gl_WorkGroupSize.x];
float wg_sum(float x)
{
	uint l = gl_LocalInvocationID.x;
	red_sh[l] = x;
	barrier();
	for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
		if (l < s)
			red_sh[l] += red_sh[l + s];
		barrier();
	}
	float t = red_sh[0];
	barrier();
	return t;
}
float wg_max(float x)
{
	uint l = gl_LocalInvocationID.x;
	red_sh[l] = x;
	barrier();
	for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
		if (l < s)
			red_sh[l] = max(red_sh[l], red_sh[l + s]);
		barrier();
	}
	float t = red_sh[0];
	barrier();
	return t;
}
#endif
