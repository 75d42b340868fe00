# vllm.cpp's test of the combine (tests/vllm/v1/worker/test_combine_tokens.cpp) over the CUDA kernel
# of src/vt/cuda/cuda_combine_tokens.cu, through redfirst/cuda/combine_shim.cu: make -s -f redfirst/cuda.mk
B := build-cuda
NVCC ?= nvcc
CUDA_ARCH ?= sm_90
INC := -Iinclude -Isrc -Ithird_party
OBJS := $(B)/tests/doctest_main.o $(B)/tests/vllm/v1/worker/test_combine_tokens.o \
        $(B)/src/vt/cuda/cuda_combine_tokens.o $(B)/redfirst/cuda/combine_shim.o
$(B)/test_combine_cuda: $(OBJS)
	$(NVCC) -arch=$(CUDA_ARCH) -o $@ $(OBJS)
$(B)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++20 -O2 -arch=$(CUDA_ARCH) $(INC) -MMD -MP -c $< -o $@
$(B)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 -O0 $(INC) -MMD -MP -c $< -o $@
-include $(OBJS:.o=.d)
