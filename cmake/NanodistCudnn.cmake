# cuDNN's fused attention (--attention cudnn) needs libcudnn + cudnn.h (cuDNN 9, beside the CUDA
# toolkit or in the system paths) and the header-only cudnn-frontend. The frontend's include dir
# comes from -DNANODIST_CUDNN_FRONTEND_INCLUDE=<dir>, else from the installed Python package
# nvidia-cudnn-frontend (PyPI). Missing either: the build goes on without cuDNN attention.
# Sets NANODIST_WITH_CUDNN and, when ON, the imported target nd::cudnn_attention.
set(NANODIST_CUDNN_FRONTEND_INCLUDE "" CACHE PATH
    "Directory holding cudnn_frontend.h (default: ask python3 for the nvidia-cudnn-frontend package)")
set(NANODIST_WITH_CUDNN OFF)

set(nd_frontend_dir "${NANODIST_CUDNN_FRONTEND_INCLUDE}")
if(NOT nd_frontend_dir)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    # The wheel installs include/cudnn_frontend.h at the top of site-packages; ask the package's
    # file list where (no import: the Python module itself needs a GPU library).
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
        "import importlib.metadata as m, os; f = [p for p in m.files('nvidia-cudnn-frontend') if p.name == 'cudnn_frontend.h']; print(os.path.dirname(str(f[0].locate())) if f else '')"
      OUTPUT_VARIABLE nd_frontend_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE nd_py_rc)
    if(NOT nd_py_rc EQUAL 0)
      set(nd_frontend_dir "")
    endif()
  endif()
endif()

find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/include/x86_64-linux-gnu
          /usr/local/cuda/include)
find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64)

if(nd_frontend_dir AND EXISTS "${nd_frontend_dir}/cudnn_frontend.h" AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
  set(NANODIST_WITH_CUDNN ON)
  if(NOT TARGET nd::cudnn_attention)
    add_library(nd::cudnn_attention INTERFACE IMPORTED)
    # SYSTEM: the frontend's own warnings are not ours to fix. NVRTC: the frontend's plan code
    # calls it (for engines of newer GPUs than ours), so the link needs it.
    set_target_properties(nd::cudnn_attention PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${nd_frontend_dir};${CUDNN_INCLUDE_DIR}"
      INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${nd_frontend_dir};${CUDNN_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${CUDNN_LIBRARY};CUDA::nvrtc")
  endif()
  message(STATUS "nanodist: cuDNN attention ON (frontend ${nd_frontend_dir}, ${CUDNN_LIBRARY})")
else()
  set(nd_missing "")
  if(NOT nd_frontend_dir OR NOT EXISTS "${nd_frontend_dir}/cudnn_frontend.h")
    string(APPEND nd_missing " cudnn_frontend.h (pip install nvidia-cudnn-frontend, or -DNANODIST_CUDNN_FRONTEND_INCLUDE=<dir>)")
  endif()
  if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
    string(APPEND nd_missing " libcudnn/cudnn.h")
  endif()
  message(STATUS "nanodist: cuDNN attention OFF; missing:${nd_missing}")
endif()
