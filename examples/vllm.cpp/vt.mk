# The two doctest suites of vllm.cpp's tests/vt/test_arena.cpp and test_graph_safe_scratch.cpp,
# built over just the sources they need with direct g++ lines: one object per source (and
# -MMD header dependencies), so a mutation rebuilds the files it touched and nothing else.
# Run from the vllm.cpp checkout's root: make -s -f redfirst/vt.mk
B := build-redfirst
CXXFLAGS := -std=c++20 -O0 -g0 -Iinclude -Isrc
SRCS := tests/doctest_main.cpp tests/vt/test_arena.cpp tests/vt/test_graph_safe_scratch.cpp \
        src/vt/arena.cpp src/vt/tensor.cpp src/vt/dtype.cpp src/vt/backend.cpp src/vt/cpu/cpu_backend.cpp
OBJS := $(SRCS:%.cpp=$(B)/%.o)

$(B)/vt_tests: $(OBJS)
	$(CXX) -o $@ $(OBJS)

$(B)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

-include $(OBJS:.o=.d)
