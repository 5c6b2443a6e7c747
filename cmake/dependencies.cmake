# Finds tierzero's host dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(OpenMP REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(dnnl REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(GTest REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
# gperftools' tcmalloc serves the tierzero binary's heap (docs/ARCHITECTURE.md#the-stack): glibc's malloc
# kept freed packing buffers resident by amounts that changed with the model's shapes. Not in the poisoned
# build, whose AddressSanitizer brings its own allocator.
if(NOT TZ_POISON_DEVICE_MEMORY)
  pkg_check_modules(TCMALLOC REQUIRED IMPORTED_TARGET libtcmalloc_minimal)
endif()
