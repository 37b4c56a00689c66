<?php
// The hello world mod_php is measured with: the same bytes as the WSGI and PSGI apps.
header("Content-Type: text/plain");
header("Content-Length: 12");
echo "Hello World!";
