/* weights.glsl - a weight matrix bound at binding WBIND as bytes, 16-bit
 * words, 32-bit words and f32 (four views of the same range: each decoder reads its
 * fields at their natural width), and the readers dequant.glsl expects. */
layout(binding = WBIND) readonly buffer WB8 { uint8_t wb8[]; };
layout(binding = WBIND) readonly buffer WB16 { uint16_t wb16[]; };
layout(binding = WBIND) readonly buffer WB32 { float wb32[]; };
layout(binding = WBIND) readonly buffer WBW { uint wbw[]; };
#define WB(o) uint(wb8[o])
#define WH(o) uint(wb16[(o) >> 1])
#define WW(o) wbw[(o) >> 2]
#define WF(o) wb32[(o) >> 2]
