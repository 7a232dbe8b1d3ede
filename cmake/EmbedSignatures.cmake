# Embeds every YAML file under signatures/ into the binary, so firstfault works with no
# configuration. The generated file is rebuilt whenever a signature file changes, and when one
# is added, moved or deleted: the list of files is written to a stamp at configure time (rewritten
# only when it differs), since a shorter DEPENDS list alone would leave the old output current.
function(firstfault_embed_signatures SIG_DIR OUT_CPP)
  file(GLOB_RECURSE _sig_files CONFIGURE_DEPENDS "${SIG_DIR}/*.yaml")
  list(SORT _sig_files)
  set(_list_stamp ${OUT_CPP}.files)
  string(REPLACE ";" "\n" _listing "${_sig_files}")
  file(CONFIGURE OUTPUT ${_list_stamp} CONTENT "${_listing}\n")
  add_custom_command(
    OUTPUT ${OUT_CPP}
    COMMAND ${CMAKE_COMMAND} -DSIG_DIR=${SIG_DIR} -DOUT_CPP=${OUT_CPP}
            -P ${CMAKE_SOURCE_DIR}/cmake/GenerateEmbedded.cmake
    DEPENDS ${_sig_files} ${_list_stamp} ${CMAKE_SOURCE_DIR}/cmake/GenerateEmbedded.cmake
    COMMENT "Embedding the signature library"
    VERBATIM)
endfunction()

# Runs TOOL (tools/snapshot.cpp) to validate the embedded library, sample lines included, and
# write OUT_CPP with its binary snapshot, which start-up reads instead of the YAML. A bad
# signature fails the build with file:line:col. TOOL links the embedded YAML, so it reruns
# whenever a signature file or the loader changes.
function(firstfault_snapshot_signatures TOOL OUT_CPP)
  add_custom_command(
    OUTPUT ${OUT_CPP}
    COMMAND ${TOOL} ${OUT_CPP}
    DEPENDS ${TOOL}
    COMMENT "Validating the signature library and writing its snapshot"
    VERBATIM)
endfunction()
