// libquantc.so's own translation unit: the library is the component libraries linked
// whole (cmake/QuantcInstall.cmake, QUANTC_SHARED_LIBRARY); a target needs one source.
namespace quantc {
/// Marks the shared library in symbol listings (nm -D libquantc.so).
extern "C" const char* quantc_shared_library() { return "quantc"; }
}  // namespace quantc
