# The layers of src/, bottom up, and what each may use. Read by
# cmake/layers.cmake (to build) and cmake/check_layers.cmake (to check).
# A file may use the headers of its own layer and of the layers listed for it,
# directly or through other headers (the checker follows every chain of
# includes), so each list holds the lists of the layers in it.
set(LBK_LAYERS core job io device engines comm index task api app)
set(LBK_DEPS_core "")
set(LBK_DEPS_job core)
set(LBK_DEPS_io core job)
set(LBK_DEPS_device core)
set(LBK_DEPS_engines core job io device)
set(LBK_DEPS_comm core job)
set(LBK_DEPS_index core job io device engines comm)
set(LBK_DEPS_task core job io device engines comm index)
set(LBK_DEPS_api core job io device engines comm index task)
set(LBK_DEPS_app core job io device engines comm index task)

# Layers whose headers may not reach some layers they use, directly or
# through other headers (their .c files may): the index's interface takes
# its own parameters (lbk_index_params), never the job, so that its two
# clients fill them in one place (src/task) and a library caller needs no
# job.
set(LBK_HEADERS_AVOID_index job)

# Headers private to their layer: no file of another layer may reach them.
# By name, a module's insides shared by its own files: NAME_impl.h (the rule
# for new private headers). By list, the private headers named before that
# rule, per layer. The list is checked against src/: a name that is not a
# header of its layer fails the build, so a renamed header cannot drop out.
set(LBK_PRIVATE_REGEX "_impl\\.h$")
set(LBK_PRIVATE_app run_state.h cleanup.h)
set(LBK_PRIVATE_comm comm_mpi.h)
set(LBK_PRIVATE_device program_cache.h)
set(LBK_PRIVATE_engines cascade.h rerank.h kdtree_select.h)
set(LBK_PRIVATE_io format_io.h gzip_whole.h)
set(LBK_PRIVATE_job job_parse.h job_schema.h)

# Headers that only some layers may reach, directly or through other headers:
# OpenCL, MPI, libyaml, zlib, libdeflate, and the header shared with the
# kernels. OpenCL also by name: a project header NAME_cl.h brings OpenCL
# types (device_cl.h, the device's OpenCL side for the engines; kdtree_cl.h,
# the tree's buffers for its query), so it counts as an OpenCL header. It is
# not private: device_cl.h exists to be used by the engines.
set(LBK_GUARDED mpi CL yaml zlib deflate hdf5 lbk_shared)
set(LBK_GUARDED_REGEX_mpi "^mpi\\.h$")
set(LBK_GUARDED_REGEX_CL "^CL/|^OpenCL/|_cl\\.h$")
set(LBK_GUARDED_REGEX_yaml "^yaml\\.h$")
set(LBK_GUARDED_REGEX_zlib "^zlib\\.h$")
set(LBK_GUARDED_REGEX_deflate "^libdeflate\\.h$")
set(LBK_GUARDED_REGEX_hdf5 "^hdf5\\.h$|^H5[A-Za-z]*\\.h$")
set(LBK_GUARDED_REGEX_lbk_shared "^lbk_shared\\.h$")
set(LBK_GUARDED_LAYERS_mpi comm)
set(LBK_GUARDED_LAYERS_CL device engines)
set(LBK_GUARDED_LAYERS_yaml job)
set(LBK_GUARDED_LAYERS_zlib io)
set(LBK_GUARDED_LAYERS_deflate io)
set(LBK_GUARDED_LAYERS_hdf5 io)
set(LBK_GUARDED_LAYERS_lbk_shared device engines)
