// Catch2 v2 (one header, Debian 12) or v3 (a library, Ubuntu 24.04): one include.
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
