#version 450
// Binomial pricing, 32 lanes of a subgroup per option (see binomial_sg.glsl).
#define LANES 32
#include "binomial_sg.glsl"
