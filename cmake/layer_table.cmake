# The layers of src/, bottom up, and what each may use. Read by
# cmake/layers.cmake (to build) and cmake/check_layers.cmake (to check).
set(LBK_LAYERS core job io device engines comm app)
set(LBK_DEPS_core "")
set(LBK_DEPS_job core)
set(LBK_DEPS_io core job)
set(LBK_DEPS_device core)
set(LBK_DEPS_engines core job io device)
set(LBK_DEPS_comm core job)
set(LBK_DEPS_app core job io device engines comm)

# Headers from outside src/ that only some layers may include: OpenCL, MPI,
# libyaml, zlib, libdeflate, and the header shared with the kernels.
set(LBK_GUARDED mpi CL yaml zlib deflate lbk_shared)
set(LBK_GUARDED_REGEX_mpi "^mpi\\.h$")
set(LBK_GUARDED_REGEX_CL "^CL/")
set(LBK_GUARDED_REGEX_yaml "^yaml\\.h$")
set(LBK_GUARDED_REGEX_zlib "^zlib\\.h$")
set(LBK_GUARDED_REGEX_deflate "^libdeflate\\.h$")
set(LBK_GUARDED_REGEX_lbk_shared "^lbk_shared\\.h$")
set(LBK_GUARDED_LAYERS_mpi comm)
set(LBK_GUARDED_LAYERS_CL device engines)
set(LBK_GUARDED_LAYERS_yaml job)
set(LBK_GUARDED_LAYERS_zlib io)
set(LBK_GUARDED_LAYERS_deflate io)
set(LBK_GUARDED_LAYERS_lbk_shared device engines)
