# Embeds every YAML file under signatures/ into the binary, so firstfault works with no
# configuration. The generated file is rebuilt whenever a signature file changes.
function(firstfault_embed_signatures SIG_DIR OUT_CPP)
  file(GLOB_RECURSE _sig_files CONFIGURE_DEPENDS "${SIG_DIR}/*.yaml")
  list(SORT _sig_files)
  add_custom_command(
    OUTPUT ${OUT_CPP}
    COMMAND ${CMAKE_COMMAND} -DSIG_DIR=${SIG_DIR} -DOUT_CPP=${OUT_CPP}
            -P ${CMAKE_SOURCE_DIR}/cmake/GenerateEmbedded.cmake
    DEPENDS ${_sig_files} ${CMAKE_SOURCE_DIR}/cmake/GenerateEmbedded.cmake
    COMMENT "Embedding the signature library"
    VERBATIM)
endfunction()
