/**
 * @file cuda_streams.hpp
 * @brief Everything a chapter needs from common/: include this one header.
 */
#pragma once

#include "cuda_streams/check.hpp"
#include "cuda_streams/device.hpp"
#include "cuda_streams/environment.hpp"
#include "cuda_streams/format.hpp"
#include "cuda_streams/options.hpp"
#include "cuda_streams/parts.hpp"
#include "cuda_streams/report.hpp"
#include "cuda_streams/timeline.hpp"
#include "cuda_streams/timing.hpp"
#include "cuda_streams/verify.hpp"
