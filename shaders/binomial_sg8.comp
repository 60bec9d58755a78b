#version 450
// Binomial pricing, 8 lanes of a subgroup per option (see binomial_sg.glsl).
#define LANES 8
#include "binomial_sg.glsl"
