#pragma once
// Placeholder until the family lands.
