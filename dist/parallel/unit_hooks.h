// The calls a model makes around each of its units (a transformer block, dist::FlatOptions::units)
// so that a sharded data-parallel engine can bind the unit's gradients to a staging buffer just
// before its backward (ZeRO 2) and gather its parameters just before they are read (ZeRO 3): the
// model's block hooks (nn/block_hooks.h), a unit being a block. dist::fully_shard installs them.
#pragma once
#include "nn/block_hooks.h"

namespace nd::dist {

using UnitHooks = nn::BlockHooks;

}  // namespace nd::dist
