# The hello-world PSGI application every Perl server is measured with; the same
# bytes as apps/python/hello.py so answers compare across languages.
use strict;
use warnings;

my $body = 'Hello World!';

my $app = sub {
    return [
        200,
        [ 'Content-Type' => 'text/plain', 'Content-Length' => length $body ],
        [$body],
    ];
};

$app;
